package canary

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// A StatefulSet target is released through its RollingUpdate partition; kube-controller-manager
// updates its pods, within the StatefulSet's maxUnavailable. Its revisions are
// ControllerRevisions whose data is the strategic merge patch kubectl rollout undo applies.

// statefulSetSource is where the controller reads the StatefulSets Canaries target.
type statefulSetSource interface {
	// Get returns a StatefulSet, or a NotFound error.
	Get(namespace, name string) (*appsv1.StatefulSet, error)
	// reference records the StatefulSet names a Canary needs; it reports whether they are all
	// listed.
	reference(canary cache.ObjectName, names ...string) bool
	// release forgets a Canary's names.
	release(canary cache.ObjectName)
}

// listerStatefulSets serves a lister that holds every StatefulSet (a test's store).
type listerStatefulSets struct{ lister appslisters.StatefulSetLister }

func (s listerStatefulSets) Get(namespace, name string) (*appsv1.StatefulSet, error) {
	return s.lister.StatefulSets(namespace).Get(name)
}
func (listerStatefulSets) reference(cache.ObjectName, ...string) bool { return true }
func (listerStatefulSets) release(cache.ObjectName)                   {}

// watchedStatefulSets watches each targeted StatefulSet by name, as watchedDeployments does the
// stable Deployments: the agent caches no StatefulSet that no Canary targets.
type watchedStatefulSets struct{ *namedWatches }

func newWatchedStatefulSets(kube kubeclient.Interface) *watchedStatefulSets {
	return &watchedStatefulSets{newNamedWatches(kube, &appsv1.StatefulSet{}, func(namespace string) listWatchFuncs {
		s := kube.AppsV1().StatefulSets(namespace)
		return listWatchFuncs{
			list:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return s.List(ctx, o) },
			watch: s.Watch,
		}
	})}
}

func (w *watchedStatefulSets) Get(namespace, name string) (*appsv1.StatefulSet, error) {
	if obj, ok := w.get(namespace, name); ok {
		return obj.(*appsv1.StatefulSet), nil
	}
	return nil, apierrors.NewNotFound(appsv1.Resource("statefulsets"), name)
}

// setStatefulSetSource gives the controller the StatefulSets Canaries target (the agent's named
// watches by default; a test's lister).
func (c *Controller) setStatefulSetSource(s statefulSetSource) {
	c.setTargetKind(kindStatefulSet, statefulSetKind{s})
}

const kindStatefulSet = "StatefulSet"

// statefulSetKind is the StatefulSet targetKind over a StatefulSets source.
type statefulSetKind struct{ source statefulSetSource }

func (k statefulSetKind) get(_ context.Context, namespace, name string) (targetWorkload, error) {
	sts, err := k.source.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return statefulSetTarget{sts}, nil
}

func (k statefulSetKind) reference(canary cache.ObjectName, name string) bool {
	if name == "" {
		return k.source.reference(canary)
	}
	return k.source.reference(canary, name)
}

func (k statefulSetKind) forget(canary cache.ObjectName) { k.source.release(canary) }

func (k statefulSetKind) run(ctx context.Context) {
	if w, ok := k.source.(*watchedStatefulSets); ok {
		w.run(ctx)
	}
}

// statefulSetTarget is a targeted StatefulSet as one sync read it.
type statefulSetTarget struct{ *appsv1.StatefulSet }

func (t statefulSetTarget) state() targetState {
	s := t.StatefulSet
	return targetState{
		observed:        s.Status.ObservedGeneration >= s.Generation,
		replicas:        stsReplicas(s),
		updated:         s.Status.UpdatedReplicas,
		available:       s.Status.AvailableReplicas,
		ready:           s.Status.ReadyReplicas,
		updateRevision:  s.Status.UpdateRevision,
		currentRevision: s.Status.CurrentRevision,
		held:            partition.StatefulSet(s),
	}
}

func (t statefulSetTarget) unsupported() string {
	if t.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return fmt.Sprintf("StatefulSet %q has updateStrategy OnDelete: a Canary releases it through the RollingUpdate partition; set updateStrategy.type to RollingUpdate", t.Name)
	}
	return ""
}

func (t statefulSetTarget) write(ctx context.Context, c *Controller, _ *v1alpha1.Canary, w targetWrite) (string, error) {
	sts := t.StatefulSet
	switch w.kind {
	case setPartition:
		patch := partition.StatefulSetPatch(w.partition)
		if _, err := c.kubeClient.AppsV1().StatefulSets(sts.Namespace).Patch(ctx, sts.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return "", fmt.Errorf("setting the partition of StatefulSet %q to %d: %w", sts.Name, w.partition, err)
		}
		return fmt.Sprintf("set the partition of StatefulSet %q from %d to %d", sts.Name, partition.StatefulSet(sts), w.partition), nil
	default:
		if err := c.restoreRevision(ctx, sts, w.revision); err != nil {
			return "", fmt.Errorf("writing the template of revision %s back to StatefulSet %q: %w", w.revision, sts.Name, err)
		}
		return fmt.Sprintf("wrote the template of revision %s back to StatefulSet %q (%s)", w.revision, sts.Name, w.reason), nil
	}
}

// restoreRevision writes the pod template a ControllerRevision of sts recorded back to sts. A
// StatefulSet's revision data is a strategic merge patch that replaces spec.template (what
// kubectl rollout undo applies), so it is applied as it is.
func (c *Controller) restoreRevision(ctx context.Context, sts *appsv1.StatefulSet, name string) error {
	rev, err := c.ownedRevision(ctx, sts, kindStatefulSet, name)
	if err != nil {
		return err
	}
	patch, err := revisiondata.NativeRestorePatch(rev.Data.Raw)
	if err != nil {
		return fmt.Errorf("ControllerRevision %q: %w", name, err)
	}
	_, err = c.kubeClient.AppsV1().StatefulSets(sts.Namespace).Patch(ctx, sts.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

func stsReplicas(s *appsv1.StatefulSet) int32 { return v1alpha1.ReplicasOrDefault(s.Spec.Replicas) }

func (statefulSetKind) latest(ctx context.Context, c *Controller, namespace, name string) (heldWorkload, error) {
	return found(func(s *appsv1.StatefulSet) heldWorkload { return heldStatefulSet{s} })(
		c.kubeClient.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{}))
}

// heldStatefulSet is held by its partition: set back to 0 when no release is under way, so that
// the StatefulSet updates its pods by itself again; in the middle of a release the partition
// stays where it is (lowering it would update the rest without steps).
type heldStatefulSet struct{ *appsv1.StatefulSet }

func (s heldStatefulSet) held() bool { return partition.StatefulSet(s.StatefulSet) != 0 }

func (s heldStatefulSet) midRelease() string {
	if s.Status.UpdateRevision == s.Status.CurrentRevision {
		return ""
	}
	return fmt.Sprintf("StatefulSet %q keeps partition %d (%d pods on revision %s); lower it to finish or restore its template to undo",
		s.Name, partition.StatefulSet(s.StatefulSet), s.Status.UpdatedReplicas, s.Status.UpdateRevision)
}

func (s heldStatefulSet) unhold(ctx context.Context, c *Controller) (string, error) {
	_, err := c.kubeClient.AppsV1().StatefulSets(s.Namespace).Patch(ctx, s.Name, types.MergePatchType, partition.StatefulSetPatch(0), metav1.PatchOptions{})
	return fmt.Sprintf("StatefulSet %q is no longer held (partition %d → 0) and updates its pods by itself again", s.Name, partition.StatefulSet(s.StatefulSet)), err
}

// updatePods selects its pods of the update revision: kube-controller-manager labels each pod
// with the name of its revision (controller-revision-hash). Its pods are not the agent's: they
// are listed from the API server.
func (t statefulSetTarget) updatePods() (labels.Selector, bool) {
	return revisionSelector(t.Spec.Selector, appsv1.ControllerRevisionHashLabelKey, t.Status.UpdateRevision), false
}
