package base

import (
	"errors"
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// ownersFixture is a TApp controller's base with TApps web (uid-web) and api (uid-api), and the
// creations and deletions its handler observed.
type ownersFixture struct {
	b                 *Base
	owners            Owners[*v1alpha1.TApp]
	created, deleted  []string
	deletingIsDeleted bool
}

func newOwnersFixture(t *testing.T, deletingIsDeleted bool) *ownersFixture {
	f := &ownersFixture{b: New("owners-test", "TApp", nil), deletingIsDeleted: deletingIsDeleted}
	t.Cleanup(f.b.Queue.ShutDown)
	tapps := map[string]*v1alpha1.TApp{}
	for _, n := range []string{"web", "api"} {
		tapps[n] = &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, UID: types.UID("uid-" + n)}}
	}
	f.owners = NewOwners(f.b, func(namespace, name string) (*v1alpha1.TApp, error) {
		if t, ok := tapps[name]; ok && namespace == "ns" {
			return t, nil
		}
		return nil, errors.New("not found")
	})
	return f
}

func (f *ownersFixture) handler() cache.ResourceEventHandler {
	return f.owners.Handler(OwnedEvents[*v1alpha1.TApp]{
		Created:           func(o *v1alpha1.TApp, obj metav1.Object) { f.created = append(f.created, o.Name+"/"+obj.GetName()) },
		Deleted:           func(o *v1alpha1.TApp, obj metav1.Object) { f.deleted = append(f.deleted, o.Name+"/"+obj.GetName()) },
		DeletingIsDeleted: f.deletingIsDeleted,
	})
}

// queued drains the queue, sorted.
func (f *ownersFixture) queued() []string {
	var out []string
	for f.b.Queue.Len() > 0 {
		k, _ := f.b.Queue.Get()
		out = append(out, k.Name)
		f.b.Queue.Done(k)
	}
	sort.Strings(out)
	return out
}

func pod(name, owner, uid, rv string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "TApp",
			Name: owner, UID: types.UID(uid), Controller: ptr.To(true)}}
	}
	return p
}

func TestOwnersResolve(t *testing.T) {
	f := newOwnersFixture(t, false)
	for _, c := range []struct {
		name string
		ref  *metav1.OwnerReference
		want bool
	}{
		{"ours", metav1.GetControllerOf(pod("p", "web", "uid-web", "1")), true},
		{"no reference", nil, false},
		{"a new owner of the same name", metav1.GetControllerOf(pod("p", "web", "uid-old", "1")), false},
		{"an owner not in the cache", metav1.GetControllerOf(pod("p", "gone", "uid-gone", "1")), false},
		{"another kind", &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "uid-web"}, false},
	} {
		if _, ok := f.owners.Resolve("ns", c.ref); ok != c.want {
			t.Errorf("%s: resolved %v, want %v", c.name, ok, c.want)
		}
	}
}

func TestOwnedHandler(t *testing.T) {
	f := newOwnersFixture(t, false)
	h := f.handler()
	h.OnAdd(pod("web-0", "web", "uid-web", "1"), false)
	h.OnAdd(pod("stray", "", "", "1"), false)
	if got := f.queued(); !reflect.DeepEqual(got, []string{"web"}) || !reflect.DeepEqual(f.created, []string{"web/web-0"}) {
		t.Errorf("add: queued %v, created %v", got, f.created)
	}
	h.OnUpdate(pod("web-0", "web", "uid-web", "1"), pod("web-0", "web", "uid-web", "1"))
	if got := f.queued(); got != nil {
		t.Errorf("a resync enqueued %v", got)
	}
	// Adopted by another owner: both are looked at again.
	h.OnUpdate(pod("web-0", "web", "uid-web", "1"), pod("web-0", "api", "uid-api", "2"))
	if got := f.queued(); !reflect.DeepEqual(got, []string{"api", "web"}) {
		t.Errorf("owner change: queued %v", got)
	}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/web-0", Obj: pod("web-0", "web", "uid-web", "3")})
	if got := f.queued(); !reflect.DeepEqual(got, []string{"web"}) || !reflect.DeepEqual(f.deleted, []string{"web/web-0"}) {
		t.Errorf("delete: queued %v, deleted %v", got, f.deleted)
	}
	// Without DeletingIsDeleted, an object being deleted is an ordinary update.
	deleting := pod("web-1", "web", "uid-web", "4")
	deleting.DeletionTimestamp = &metav1.Time{}
	h.OnUpdate(pod("web-1", "web", "uid-web", "3"), deleting)
	if len(f.deleted) != 1 {
		t.Errorf("an update setting deletionTimestamp counted as a deletion: %v", f.deleted)
	}
	f.owners.EnqueueOwner(pod("rev", "api", "uid-api", "1"))
	if got := f.queued(); !reflect.DeepEqual(got, []string{"api", "web"}) {
		t.Errorf("queued %v", got)
	}
}

func TestOwnedHandlerCountsDeletingAsDeleted(t *testing.T) {
	f := newOwnersFixture(t, true)
	h := f.handler()
	deleting := pod("web-0", "web", "uid-web", "2")
	deleting.DeletionTimestamp = &metav1.Time{}
	h.OnAdd(deleting, false)
	h.OnUpdate(pod("web-1", "web", "uid-web", "1"), func() *corev1.Pod {
		p := pod("web-1", "web", "uid-web", "2")
		p.DeletionTimestamp = &metav1.Time{}
		return p
	}())
	if !reflect.DeepEqual(f.deleted, []string{"web/web-0", "web/web-1"}) || f.created != nil {
		t.Errorf("deleted %v, created %v; want both pods deleted, none created", f.deleted, f.created)
	}
	if got := f.queued(); !reflect.DeepEqual(got, []string{"web"}) {
		t.Errorf("queued %v", got)
	}
}
