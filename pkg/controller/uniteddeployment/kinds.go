package uniteddeployment

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
)

// subsetKinds builds every subset kind, with the informer its workloads are watched through, in
// the order spec.template's fields are checked. A kind is one file (accessors and a constructor,
// see statefulset.go) and one entry here.
var subsetKinds = []func(*ctrl.Context) (workloadKind, cache.SharedIndexInformer){
	newStatefulSets,
	newDeployments,
	newTApps,
}

// workload is the Go type of a subset workload kind (*appsv1.StatefulSet, …).
type workload interface {
	metav1.Object
	runtime.Object
}

// typedClient is the part of a generated typed client (for example
// kubeclient.Interface.AppsV1().StatefulSets(namespace)) that the controller writes with.
type typedClient[T workload] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// namespaceLister is the part of a generated namespace lister the controller reads with.
type namespaceLister[T workload] interface {
	List(selector labels.Selector) ([]T, error)
}

// accessors is everything one subset kind knows of its workload type; a kind file
// (statefulset.go, deployment.go, tapp.go) implements it and nothing else. Building, listing,
// creating, updating and deleting workloads is written once, in subsetKind.
type accessors[T workload] interface {
	// kind is the workload kind, for example "StatefulSet".
	kind() string
	// podOwnerKind is the kind of the controller of the workload's pods (ReplicaSet for a
	// Deployment).
	podOwnerKind() string
	// partitions says whether the kind can keep some of its pods on an old template.
	partitions() bool
	// template returns the metadata of ud's template of this kind, nil when ud's template asks
	// for another kind.
	template(ud *appsv1alpha1.UnitedDeployment) *metav1.ObjectMeta
	// newObject returns an empty workload.
	newObject() T
	// replicas returns spec.replicas.
	replicas(obj T) *int32
	// status returns the workload's own counts of its pods (replicas, ready, updated to its
	// template): a member's pods are not in the agent's caches, so its subsets are counted so.
	status(obj T) workloadStatus
	// setTemplate replaces obj's spec by the spec of ud's template. A new workload (create)
	// gets selector; an existing one keeps its selector and whatever else the kind cannot
	// change once created.
	setTemplate(obj T, ud *appsv1alpha1.UnitedDeployment, selector *metav1.LabelSelector, create bool)
	// podTemplates calls each on every pod template of obj.
	podTemplates(obj T, each func(*corev1.PodTemplateSpec))
	// setScale writes the subset's replicas, partition and pause with the kind's own means.
	setScale(obj T, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec)
	// lister and client read and write the kind in a namespace.
	lister(namespace string) namespaceLister[T]
	client(namespace string) typedClient[T]
}

// workloadKind is a subset kind as the controller uses it, whatever its Go type. Kind,
// PodOwnerKind, Partitions, Selected and Build are pure; List reads the informer cache; Create,
// Update and Delete write.
type workloadKind interface {
	Kind() string
	PodOwnerKind() string
	Partitions() bool
	// Selected reports whether ud's spec.template asks for this kind.
	Selected(ud *appsv1alpha1.UnitedDeployment) bool
	// List returns, from the informer cache, the workloads of this kind controlled by ud that
	// are not being deleted.
	List(ud *appsv1alpha1.UnitedDeployment) ([]*Subset, error)
	// Build returns the workload spec asks for: a new one named from generateName
	// <ud>-<subset>- when existing is nil, else a copy of existing brought to spec.
	Build(ud *appsv1alpha1.UnitedDeployment, existing *Subset, spec *SubsetSpec) metav1.Object
	Create(ctx context.Context, obj metav1.Object) (metav1.Object, error)
	Update(ctx context.Context, obj metav1.Object) error
	// Delete deletes a workload guarded by its UID; a workload already gone is not an error.
	Delete(ctx context.Context, s *Subset) error
}

// subsetKind implements workloadKind for a kind's accessors. cluster is empty for the hub's
// workloads; for a member's it is the ClusterProfile's namespace/name, and its workloads carry
// LabelUnitedDeploymentUID instead of a controller reference (none can cross clusters).
type subsetKind[T workload] struct {
	a       accessors[T]
	cluster string
}

func (k subsetKind[T]) Kind() string         { return k.a.kind() }
func (k subsetKind[T]) PodOwnerKind() string { return k.a.podOwnerKind() }
func (k subsetKind[T]) Partitions() bool     { return k.a.partitions() }

func (k subsetKind[T]) Selected(ud *appsv1alpha1.UnitedDeployment) bool {
	return k.a.template(ud) != nil
}

func (k subsetKind[T]) List(ud *appsv1alpha1.UnitedDeployment) ([]*Subset, error) {
	objs, err := k.a.lister(ud.Namespace).List(ownedSelector(ud))
	if err != nil {
		return nil, err
	}
	var out []*Subset
	for _, o := range objs {
		if k.ours(o, ud) {
			s := newSubset(o, k.a.replicas(o))
			s.Cluster, s.Status, s.kind = k.cluster, k.a.status(o), k
			out = append(out, s)
		}
	}
	return out, nil
}

func (k subsetKind[T]) Build(ud *appsv1alpha1.UnitedDeployment, existing *Subset, spec *SubsetSpec) metav1.Object {
	var obj T
	create := existing == nil
	if create {
		obj = k.a.newObject()
		obj.SetNamespace(ud.Namespace)
		obj.SetGenerateName(subsetPrefix(ud, spec.Subset.Name))
		if k.cluster == "" {
			obj.SetOwnerReferences([]metav1.OwnerReference{*controllerRef(ud)})
		}
	} else {
		obj = existing.Object.(T).DeepCopyObject().(T)
	}
	if create || spec.ApplyTemplate {
		k.applyTemplate(obj, ud, spec, create)
	}
	k.a.setScale(obj, ud, spec)
	return obj
}

// applyTemplate writes ud's template, with our labels and the subset's topology, into obj.
func (k subsetKind[T]) applyTemplate(obj T, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec, create bool) {
	tmpl := k.a.template(ud)
	l, a := obj.GetLabels(), obj.GetAnnotations()
	mergeLabels(&l, workloadLabels(tmpl.Labels, ud, spec))
	if k.cluster != "" {
		l[appsv1alpha1.LabelUnitedDeploymentUID] = string(ud.UID)
	}
	mergeLabels(&a, workloadAnnotations(tmpl.Annotations, spec))
	obj.SetLabels(l)
	obj.SetAnnotations(a)
	k.a.setTemplate(obj, ud, subsetSelector(ud, spec.Subset.Name), create)
	k.a.podTemplates(obj, func(t *corev1.PodTemplateSpec) { preparePodTemplate(t, ud, spec) })
}

// ours filters the live workloads of ud: controlled by it on the hub, labelled with its UID in
// a member.
func (k subsetKind[T]) ours(obj metav1.Object, ud *appsv1alpha1.UnitedDeployment) bool {
	if k.cluster == "" {
		return controlledAndLive(obj, ud)
	}
	return obj.GetDeletionTimestamp() == nil && obj.GetLabels()[appsv1alpha1.LabelUnitedDeploymentUID] == string(ud.UID)
}

func (k subsetKind[T]) Create(ctx context.Context, obj metav1.Object) (metav1.Object, error) {
	out, err := k.a.client(obj.GetNamespace()).Create(ctx, obj.(T), metav1.CreateOptions{})
	if err != nil {
		return nil, k.memberError(err)
	}
	return out, nil
}

func (k subsetKind[T]) Update(ctx context.Context, obj metav1.Object) error {
	_, err := k.a.client(obj.GetNamespace()).Update(ctx, obj.(T), metav1.UpdateOptions{})
	return k.memberError(err)
}

func (k subsetKind[T]) Delete(ctx context.Context, s *Subset) error {
	err := k.a.client(s.Object.GetNamespace()).Delete(ctx, s.Object.GetName(), deleteOptions(s.Object))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return k.memberError(err)
}

// memberError names the member a refused write went to and redacts anything shaped like a
// credential from its message, which goes to the log, an Event and the status. The API
// server's status (its reason and code) is kept, redacted too: a conflict from a member is then
// what it is on the hub, a cache behind the API server, requeued quietly (worker.Queue.Lagging)
// instead of logged as an error.
func (k subsetKind[T]) memberError(err error) error {
	if err == nil || k.cluster == "" {
		return err
	}
	return &memberWriteError{cluster: k.cluster, err: fleet.RedactError(err)}
}

// memberWriteError is a member's refusal of a write, naming the member.
type memberWriteError struct {
	cluster string
	err     error
}

func (e *memberWriteError) Error() string { return "in cluster " + e.cluster + ": " + e.err.Error() }
func (e *memberWriteError) Unwrap() error { return e.err }

// quietRequeue reports the errors requeued without an error line: a conflict (a cache behind
// the API server, on the hub or in a member) and a write a member's API server never answered
// (refused connection, timeout). The latter marks the member failing (pkg/fleet's health), so
// the next sync holds its subsets and says so in subsetStatuses[].cluster and SubsetFailure: an
// outage is a state the status reports, and logging every write it refused would only repeat it.
func quietRequeue(err error) bool {
	var m *memberWriteError
	if errors.As(err, &m) {
		var status apierrors.APIStatus
		if !errors.As(m.err, &status) {
			return true
		}
	}
	return apierrors.IsConflict(err)
}
