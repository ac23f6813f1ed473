package base

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

// Owners resolves the objects a controller creates (pods, subset workloads, revisions) to the
// object of its kind that controls them, as kube-controller-manager's controllers do: by the
// controller reference, checked against the owner's UID in the cache (a new owner of the same
// name has another UID and does not adopt the old one's children).
type Owners[T metav1.Object] struct {
	base *Base
	get  func(namespace, name string) (T, error)
}

// NewOwners resolves controller references to b's kind with get (the kind's lister).
func NewOwners[T metav1.Object](b *Base, get func(namespace, name string) (T, error)) Owners[T] {
	return Owners[T]{base: b, get: get}
}

// Resolve returns the owner a controller reference points to, or false when it points to
// another kind or to an owner that no longer exists.
func (o Owners[T]) Resolve(namespace string, ref *metav1.OwnerReference) (T, bool) {
	var none T
	if !o.base.IsOurs(ref) {
		return none, false
	}
	owner, err := o.get(namespace, ref.Name)
	if err != nil || owner.GetUID() != ref.UID {
		return none, false
	}
	return owner, true
}

// OwnedEvents is what a controller does, besides enqueueing the owner, when an object it
// controls comes or goes: record the creation or deletion as observed (expectations).
type OwnedEvents[T metav1.Object] struct {
	// Created is called for an object that appeared.
	Created func(owner T, obj metav1.Object)
	// Deleted is called for an object that is gone (from a delete event or a tombstone) or, with
	// DeletingIsDeleted, that has a deletionTimestamp.
	Deleted func(owner T, obj metav1.Object)
	// DeletingIsDeleted counts an object being deleted as deleted when it is added (a restart
	// lists it terminating) or updated (a graceful deletion shows first as an update): pods,
	// whose grace period would otherwise hold their owner back.
	DeletingIsDeleted bool
}

// Handler is the event handler of the objects the controller controls: each event enqueues the
// owner (an update whose controller reference changed also the former owner) after calling ev.
// Updates that change nothing (periodic resyncs) are ignored: the owner's own resync covers them.
func (o Owners[T]) Handler(ev OwnedEvents[T]) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			m, ok := obj.(metav1.Object)
			if !ok {
				return
			}
			if ev.DeletingIsDeleted && m.GetDeletionTimestamp() != nil {
				o.deleted(ev, m)
				return
			}
			if owner, ok := o.Resolve(m.GetNamespace(), metav1.GetControllerOf(m)); ok {
				if ev.Created != nil {
					ev.Created(owner, m)
				}
				o.base.Enqueue(owner)
			}
		},
		UpdateFunc: func(oldObj, curObj any) { o.updated(ev, oldObj, curObj) },
		DeleteFunc: func(obj any) {
			m, err := expectations.ObjectFromDeleteEvent(obj)
			if err != nil {
				utilruntime.HandleError(err)
				return
			}
			o.deleted(ev, m)
		},
	}
}

func (o Owners[T]) updated(ev OwnedEvents[T], oldObj, curObj any) {
	old, ok1 := oldObj.(metav1.Object)
	cur, ok2 := curObj.(metav1.Object)
	if !ok1 || !ok2 || old.GetResourceVersion() == cur.GetResourceVersion() {
		return
	}
	if ev.DeletingIsDeleted && cur.GetDeletionTimestamp() != nil {
		o.deleted(ev, cur)
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if owner, ok := o.Resolve(old.GetNamespace(), oldRef); ok {
			o.base.Enqueue(owner)
		}
	}
	if owner, ok := o.Resolve(cur.GetNamespace(), curRef); ok {
		o.base.Enqueue(owner)
	}
}

func (o Owners[T]) deleted(ev OwnedEvents[T], m metav1.Object) {
	owner, ok := o.Resolve(m.GetNamespace(), metav1.GetControllerOf(m))
	if !ok {
		return
	}
	if ev.Deleted != nil {
		ev.Deleted(owner, m)
	}
	o.base.Enqueue(owner)
}

// EnqueueOwner enqueues the owner of obj (tombstones accepted), for events that need nothing
// else: a revision deleted by someone else, which may still be needed.
func (o Owners[T]) EnqueueOwner(obj any) {
	m, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if owner, ok := o.Resolve(m.GetNamespace(), metav1.GetControllerOf(m)); ok {
		o.base.Enqueue(owner)
	}
}
