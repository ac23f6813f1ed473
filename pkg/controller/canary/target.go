package canary

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

// A Canary with spec.targetRef releases a StatefulSet in place (DESIGN §2.5,
// docs/canary-targets.md): between releases it holds the StatefulSet's partition at its
// replicas, so that a new pod template updates no pod; when the template changes
// (status.updateRevision differs from status.currentRevision) it runs the same steps, pauses,
// analysis and deadline as a Deployment release, each step lowering the partition to
// replicas − the step's pods. kube-controller-manager updates the pods, within the
// StatefulSet's own maxUnavailable. An abort writes the stable revision's template back (from
// its ControllerRevision, as kubectl rollout undo does), which returns the updated pods to it.

// StatefulSets is where the controller reads the StatefulSets Canaries target.
type StatefulSets interface {
	// Get returns a StatefulSet, or a NotFound error.
	Get(namespace, name string) (*appsv1.StatefulSet, error)
	// Reference records the StatefulSet names a Canary needs; it reports whether they are all
	// listed.
	Reference(canary cache.ObjectName, names ...string) bool
	// Release forgets a Canary's names.
	Release(canary cache.ObjectName)
}

// listerStatefulSets serves a lister that holds every StatefulSet (a test's store).
type listerStatefulSets struct{ lister appslisters.StatefulSetLister }

// ListerStatefulSets is a StatefulSets source over a lister that holds every StatefulSet.
func ListerStatefulSets(l appslisters.StatefulSetLister) StatefulSets { return listerStatefulSets{l} }

func (s listerStatefulSets) Get(namespace, name string) (*appsv1.StatefulSet, error) {
	return s.lister.StatefulSets(namespace).Get(name)
}
func (listerStatefulSets) Reference(cache.ObjectName, ...string) bool { return true }
func (listerStatefulSets) Release(cache.ObjectName)                   {}

// watchedStatefulSets watches each targeted StatefulSet by name, as WatchedDeployments does the
// stable Deployments: the agent caches no StatefulSet that no Canary targets.
type watchedStatefulSets struct{ *namedWatches }

func newWatchedStatefulSets(kube kubernetes.Interface) *watchedStatefulSets {
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

// SetStatefulSetSource gives the controller the StatefulSets Canaries target (the agent's named
// watches by default; a test's lister).
func (c *Controller) SetStatefulSetSource(s StatefulSets) { c.statefulSets = s }

// targetIndex indexes Canaries by the kind/namespace/name of their targetRef.
const targetIndex = "canary.apps.workload.dev/targets"

func indexByTarget(obj interface{}) ([]string, error) {
	cn, ok := obj.(*v1alpha1.Canary)
	if !ok || cn.Spec.TargetRef == nil {
		return nil, nil
	}
	return []string{targetKey(cn.Spec.TargetRef.Kind, cn.Namespace, cn.Spec.TargetRef.Name)}, nil
}

func targetKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// handleStatefulSet enqueues the Canaries that target a StatefulSet.
func (c *Controller) handleStatefulSet(obj interface{}) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		return
	}
	canaries, _ := c.canaryIndexer.ByIndex(targetIndex, targetKey("StatefulSet", o.GetNamespace(), o.GetName()))
	for _, cn := range canaries {
		c.Enqueue(cn)
	}
}

// holder returns the name of the Canary that holds cn's target when it is another one: of all
// Canaries that target it, the oldest (by name when as old) holds it.
func (c *Controller) holder(cn *v1alpha1.Canary) string {
	ref := cn.Spec.TargetRef
	objs, err := c.canaryIndexer.ByIndex(targetIndex, targetKey(ref.Kind, cn.Namespace, ref.Name))
	if err != nil {
		return ""
	}
	first := cn
	for _, obj := range objs {
		o := obj.(*v1alpha1.Canary)
		if o.DeletionTimestamp != nil || o.UID == cn.UID {
			continue
		}
		if o.CreationTimestamp.Before(&first.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&first.CreationTimestamp) && o.Name < first.Name) {
			first = o
		}
	}
	if first == cn {
		return ""
	}
	return first.Name
}

// observeTarget reads cn's target StatefulSet (nil when it does not exist) and who holds it.
func (c *Controller) observeTarget(obs *observed) error {
	cn := obs.canary
	if c.statefulSets == nil {
		return fmt.Errorf("the controller has no StatefulSet source")
	}
	sts, err := c.statefulSets.Get(cn.Namespace, cn.Spec.TargetRef.Name)
	if apierrors.IsNotFound(err) {
		sts, err = nil, nil
	}
	if err != nil {
		return err
	}
	obs.target = sts
	obs.targetHolder = c.holder(cn)
	return nil
}

// targetWriteKind says what a targetWrite does.
type targetWriteKind int

const (
	setPartition targetWriteKind = iota
	restoreTemplate
)

// targetWrite is one decided write of the target StatefulSet.
type targetWrite struct {
	kind      targetWriteKind
	partition int32  // setPartition
	revision  string // restoreTemplate: the ControllerRevision whose template is written back
	reason    string // restoreTemplate: why, for its Event
}

// reconcileTarget is reconcile for a Canary with spec.targetRef.
func (r *reconciler) reconcileTarget() {
	cn := r.canary
	steps, err := stepsOf(&cn.Spec)
	if err != nil {
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("invalid batch plan: %v", err))
		return
	}
	r.steps = steps
	sts := r.obs.target
	ref := cn.Spec.TargetRef
	switch {
	case sts == nil:
		r.setDegraded(v1alpha1.ReasonTargetNotFound, fmt.Sprintf(
			"%s %q not found in namespace %q: nothing is changed until it exists", ref.Kind, ref.Name, cn.Namespace))
		return
	case r.obs.targetHolder != "":
		r.setDegraded(v1alpha1.ReasonTargetHeld, fmt.Sprintf(
			"%s %q is released by Canary %q already: one Canary per workload; delete this one or that one", ref.Kind, ref.Name, r.obs.targetHolder))
		return
	case sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		r.setDegraded(v1alpha1.ReasonTargetUnsupported, fmt.Sprintf(
			"StatefulSet %q has updateStrategy OnDelete: a Canary releases it through the RollingUpdate partition; set updateStrategy.type to RollingUpdate", ref.Name))
		return
	case stsReplicas(sts) != cn.Spec.Replicas:
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"spec.replicas is %d but StatefulSet %q has %d replicas: the steps count its pods; set spec.replicas to %d (nothing is changed until then)",
			cn.Spec.Replicas, ref.Name, stsReplicas(sts), stsReplicas(sts)))
		return
	case sts.Status.ObservedGeneration < sts.Generation:
		r.phase, r.reason = r.status.Phase, v1alpha1.ReasonBatchUpgrading
		if r.phase == "" {
			r.phase = v1alpha1.CanaryProgressing
		}
		// Its status write, when it catches up, is an event of the named watch: no polling.
		r.message = fmt.Sprintf("waiting for the StatefulSet controller to observe generation %d of %q", sts.Generation, ref.Name)
		return
	}
	r.targetRetry()
	prev := r.status.Target
	update, current := sts.Status.UpdateRevision, sts.Status.CurrentRevision
	pending := update != current
	// tail: the last step moved every pod to the revision being released, which the
	// StatefulSet then made current: the release still finishes its last step (its bake).
	tail := !pending && prev != nil && prev.UpdateRevision == update && prev.StableRevision != "" && prev.StableRevision != update
	// The stable revision is the one the release started from: kept while it runs, and while
	// it rolls back (when the restored template makes it the update revision again).
	rollback := cn.Spec.Rollback || r.aborted()
	known := prev != nil && prev.StableRevision != ""
	switch {
	case known && (rollback || tail || (pending && prev.UpdateRevision == update)):
		r.stableRev = prev.StableRevision
	default:
		r.stableRev = current
	}
	switch {
	case rollback:
		r.rollbackTarget()
	case pending || tail:
		r.releaseTarget(tail)
	default:
		r.holdTarget()
	}
}

// releaseTarget moves a release of the target's update revision forward through the steps.
func (r *reconciler) releaseTarget(tail bool) {
	sts := r.obs.target
	st := &r.status
	if !tail && (st.Target == nil || st.Target.UpdateRevision != sts.Status.UpdateRevision) {
		// A new revision to release (or one changed mid-release): from step 1, every pause
		// waiting for a person again (the approvals were the last release's).
		st.CurrentBatch, st.Batches, st.Analysis = 0, nil, nil
		if r.canary.Spec.ApprovedBatch != 0 {
			r.resetApproval = r.canary.Spec.ApprovedBatch
			r.canary.Spec.ApprovedBatch = 0
		}
		r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted, "StatefulSet %q has a new revision %s: releasing it through the steps from revision %s",
			sts.Name, sts.Status.UpdateRevision, sts.Status.CurrentRevision)
	}
	r.progress()
	if r.aborted() {
		r.rollbackTarget()
		return
	}
	if tail && r.completed() {
		r.stableRev = sts.Status.UpdateRevision
		r.movePartition(0, false) // hold for the next release
	}
}

// movePartition sets the partition so that target pods run the update revision; with hold
// (spec.paused) the partition only rises.
func (r *reconciler) movePartition(target int32, hold bool) {
	want := max(0, r.canary.Spec.Replicas-target)
	cur := stsPartition(r.obs.target)
	if want == cur || (hold && want < cur) {
		return
	}
	r.targetWrites = append(r.targetWrites, targetWrite{kind: setPartition, partition: want})
}

// holdTarget keeps a target with nothing to release at partition = replicas, so that the next
// template change updates no pod until its release starts, and reports the last release.
func (r *reconciler) holdTarget() {
	sts := r.obs.target
	st := &r.status
	rolledBack := r.canary.Spec.Rollback || r.aborted()
	settled := sts.Status.UpdatedReplicas >= stsReplicas(sts) && sts.Status.AvailableReplicas >= stsReplicas(sts) &&
		sts.Status.UpdateRevision == sts.Status.CurrentRevision
	if settled || !rolledBack {
		r.movePartition(0, false)
	}
	switch {
	case rolledBack && !settled:
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling StatefulSet %q back to revision %s: %d of %d pods on it, %d available",
			sts.Name, sts.Status.UpdateRevision, sts.Status.UpdatedReplicas, stsReplicas(sts), sts.Status.AvailableReplicas)
	case rolledBack:
		if st.Phase != v1alpha1.CanaryRolledBack {
			r.event(corev1.EventTypeNormal, v1alpha1.EventRolledBack, "every pod of StatefulSet %q runs revision %s again", sts.Name, sts.Status.UpdateRevision)
		}
		r.phase, r.reason = v1alpha1.CanaryRolledBack, v1alpha1.ReasonRolledBack
		r.message = fmt.Sprintf("rolled back: every pod of StatefulSet %q runs revision %s; held at partition %d", sts.Name, sts.Status.UpdateRevision, stsReplicas(sts))
	case st.CurrentBatch > 0 && len(r.steps) > 0:
		// The release ran its steps and the StatefulSet made the update revision current.
		n := int32(len(r.steps))
		for i := range st.Batches {
			st.Batches[i].State = v1alpha1.BatchCompleted
		}
		if st.Phase != v1alpha1.CanaryCompleted {
			r.event(corev1.EventTypeNormal, v1alpha1.EventReleaseComplete, "all %d steps complete: every pod of StatefulSet %q runs revision %s", n, sts.Name, sts.Status.CurrentRevision)
		}
		st.CurrentBatch = n
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonCompleted
		r.message = fmt.Sprintf("all %d steps complete: %d of %d pods of StatefulSet %q available on revision %s; held at partition %d until the next template change",
			n, sts.Status.AvailableReplicas, stsReplicas(sts), sts.Name, sts.Status.CurrentRevision, stsReplicas(sts))
	default:
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding
		r.message = fmt.Sprintf("holding StatefulSet %q at revision %s (partition %d): the next change of its pod template is released through the steps",
			sts.Name, sts.Status.CurrentRevision, stsReplicas(sts))
	}
}

// rollbackTarget returns the target to the stable revision of the release: it writes that
// revision's template back, then kube-controller-manager returns the updated pods to it within
// the StatefulSet's maxUnavailable; once they all run it, the target is held again.
func (r *reconciler) rollbackTarget() {
	sts := r.obs.target
	stable := r.stableRev
	reason := "spec.rollback is set"
	if a := r.status.Abort; a != nil && r.aborted() {
		reason = a.Reason
	}
	if sts.Status.UpdateRevision != stable {
		if r.status.Phase != v1alpha1.CanaryRollingBack {
			r.event(corev1.EventTypeNormal, v1alpha1.EventRollingBack, "rolling StatefulSet %q back from revision %s to %s (%s)",
				sts.Name, sts.Status.UpdateRevision, stable, reason)
		}
		r.abortedRevision = sts.Status.UpdateRevision
		r.targetWrites = append(r.targetWrites, targetWrite{kind: restoreTemplate, revision: stable, reason: reason})
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling StatefulSet %q back to revision %s (%s): writing its template back", sts.Name, stable, reason)
		return
	}
	r.holdTarget()
}

// targetRetry, once spec.retries rose above the retries of the last rollback (kubectl workload
// retry, after an abort by itself or on request), writes the aborted revision's template to the
// target again: its release then starts from step 1.
func (r *reconciler) targetRetry() {
	if a := r.status.Abort; a != nil && a.Retries < r.canary.Spec.Retries {
		r.retry()
	}
	t := r.status.Target
	if t == nil || t.AbortedRevision == "" || r.canary.Spec.Rollback || r.aborted() || t.AbortedRetries >= r.canary.Spec.Retries {
		return
	}
	r.retried = true
	if r.obs.target.Status.UpdateRevision != t.AbortedRevision {
		r.targetWrites = append(r.targetWrites, targetWrite{kind: restoreTemplate, revision: t.AbortedRevision, reason: "retry"})
	}
}

// executeTarget makes the target writes of a plan, stopping at the first the API server refuses.
func (c *Controller) executeTarget(ctx context.Context, r *reconciler) (*failure, error) {
	sts := r.obs.target
	for _, w := range r.targetWrites {
		var err error
		var done, doing string
		switch w.kind {
		case setPartition:
			doing = fmt.Sprintf("setting the partition of StatefulSet %q to %d", sts.Name, w.partition)
			patch := fmt.Appendf(nil, `{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":%d}}}}`, w.partition)
			_, err = c.kubeClient.AppsV1().StatefulSets(sts.Namespace).Patch(ctx, sts.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			done = fmt.Sprintf("set the partition of StatefulSet %q from %d to %d", sts.Name, stsPartition(sts), w.partition)
		case restoreTemplate:
			doing = fmt.Sprintf("writing the template of revision %s back to StatefulSet %q", w.revision, sts.Name)
			err = c.restoreRevision(ctx, sts, w.revision)
			done = fmt.Sprintf("wrote the template of revision %s back to StatefulSet %q (%s)", w.revision, sts.Name, w.reason)
		}
		if err != nil {
			f := &failure{reason: v1alpha1.ReasonFailedUpdate, message: fmt.Sprintf("%s: %v", doing, err)}
			c.Recorder.Eventf(r.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
			return f, fmt.Errorf("%s: %w", doing, err)
		}
		reason := v1alpha1.EventPartitionSet
		if w.kind == restoreTemplate {
			reason = v1alpha1.EventTemplateRestored
		}
		c.Recorder.Event(r.canary, corev1.EventTypeNormal, reason, done)
	}
	return nil, nil
}

// restoreRevision writes the pod template a ControllerRevision of sts recorded back to sts. A
// StatefulSet's revision data is a strategic merge patch that replaces spec.template (what
// kubectl rollout undo applies), so it is applied as it is.
func (c *Controller) restoreRevision(ctx context.Context, sts *appsv1.StatefulSet, name string) error {
	rev, err := c.kubeClient.AppsV1().ControllerRevisions(sts.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ControllerRevision %q: %w", name, err)
	}
	if !metav1.IsControlledBy(rev, sts) {
		return fmt.Errorf("ControllerRevision %q does not belong to StatefulSet %q", name, sts.Name)
	}
	_, err = c.kubeClient.AppsV1().StatefulSets(sts.Namespace).Patch(ctx, sts.Name, types.StrategicMergePatchType, rev.Data.Raw, metav1.PatchOptions{})
	return err
}

// targetStatus fills the replica counts and status.target of a Canary with a target.
func targetStatus(r *reconciler, st *v1alpha1.CanaryStatus) {
	sts := r.obs.target
	if sts == nil {
		st.Target = nil
		return
	}
	t := &v1alpha1.CanaryTargetStatus{
		StableRevision:    r.stableRev,
		UpdateRevision:    sts.Status.UpdateRevision,
		Partition:         stsPartition(sts),
		UpdatedReplicas:   sts.Status.UpdatedReplicas,
		AvailableReplicas: sts.Status.AvailableReplicas,
	}
	if st.Target != nil {
		t.AbortedRevision, t.AbortedRetries = st.Target.AbortedRevision, st.Target.AbortedRetries
	}
	if r.abortedRevision != "" {
		t.AbortedRevision, t.AbortedRetries = r.abortedRevision, r.canary.Spec.Retries
	}
	if r.retried {
		t.AbortedRevision, t.AbortedRetries = "", 0
	}
	for _, w := range r.targetWrites {
		if w.kind == setPartition {
			t.Partition = w.partition
		}
	}
	st.Target = t
	updated := r.canaryReplicas()
	st.CanaryReplicas = updated
	st.StableReplicas = max(0, stsReplicas(sts)-updated)
	st.CanaryAvailable = min(updated, sts.Status.AvailableReplicas)
	st.StableAvailable = sts.Status.AvailableReplicas - st.CanaryAvailable
}

// targetStepDone reports whether the target runs step k: the partition set for it, and its
// pods all available with the step's pods on the update revision.
func (r *reconciler) targetStepDone(k int32) bool {
	sts := r.obs.target
	target := r.steps[k-1].canaryReplicas
	return sts.Status.ObservedGeneration >= sts.Generation &&
		stsPartition(sts) == max(0, r.canary.Spec.Replicas-target) &&
		sts.Status.UpdatedReplicas >= target &&
		sts.Status.AvailableReplicas >= stsReplicas(sts) &&
		sts.Status.ReadyReplicas >= stsReplicas(sts)
}

func stsReplicas(s *appsv1.StatefulSet) int32 { return v1alpha1.ReplicasOrDefault(s.Spec.Replicas) }

func stsPartition(s *appsv1.StatefulSet) int32 {
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

// referenceTarget records the StatefulSet a Canary targets (none without spec.targetRef); it
// reports whether it is listed.
func (c *Controller) referenceTarget(key cache.ObjectName, cn *v1alpha1.Canary) bool {
	if c.statefulSets == nil {
		return true
	}
	if cn.Spec.TargetRef == nil {
		return c.statefulSets.Reference(key)
	}
	return c.statefulSets.Reference(key, cn.Spec.TargetRef.Name)
}

// move sets the release's pods to target: the Deployments' replicas, or the target's partition.
func (r *reconciler) move(target int32, hold bool) {
	if r.obs.target != nil {
		r.movePartition(target, hold)
		return
	}
	r.scale(target, hold)
}

// canaryReplicas is the number of pods on the new template: the canary Deployment's replicas,
// or the target's pods on its update revision.
func (r *reconciler) canaryReplicas() int32 {
	if sts := r.obs.target; sts != nil {
		if sts.Status.UpdateRevision == r.stableRev {
			return 0
		}
		return sts.Status.UpdatedReplicas
	}
	return replicasOf(r.canaryDep)
}

// stableReplicas is the number of pods on the stable template.
func (r *reconciler) stableReplicas() int32 {
	if sts := r.obs.target; sts != nil {
		return max(0, stsReplicas(sts)-r.canaryReplicas())
	}
	return replicasOf(r.stable)
}

// stableLeft is the number of stable pods the release still waits to go once its last step is
// complete (0 when none is left).
func (r *reconciler) stableLeft() int32 {
	if sts := r.obs.target; sts != nil {
		if sts.Status.CurrentRevision == sts.Status.UpdateRevision {
			return 0
		}
		return max(1, r.stableReplicas())
	}
	if stableGone(r.stable) {
		return 0
	}
	return max(podsOf(r.stable), 1)
}

// releaseHold, as a Canary with a target is deleted, sets the partition it held back to 0 when no
// release is under way, so that the StatefulSet updates its pods by itself again; in the middle
// of a release it leaves the partition where it is (lowering it would update the rest without
// steps) and says so.
func (c *Controller) releaseHold(ctx context.Context, cn *v1alpha1.Canary) error {
	ref := cn.Spec.TargetRef
	if ref == nil || c.holder(cn) != "" {
		return nil
	}
	sts, err := c.kubeClient.AppsV1().StatefulSets(cn.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading StatefulSet %s: %w", ref.Name, err)
	}
	p := stsPartition(sts)
	if p == 0 {
		return nil
	}
	if sts.Status.UpdateRevision != sts.Status.CurrentRevision {
		c.eventf(cn, corev1.EventTypeWarning, v1alpha1.EventPartitionSet,
			"Canary deleted mid-release: StatefulSet %q keeps partition %d (%d pods on revision %s); lower it to finish or restore its template to undo",
			sts.Name, p, sts.Status.UpdatedReplicas, sts.Status.UpdateRevision)
		return nil
	}
	patch := []byte(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
	if _, err := c.kubeClient.AppsV1().StatefulSets(cn.Namespace).Patch(ctx, sts.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing the partition of StatefulSet %s: %w", sts.Name, err)
	}
	c.eventf(cn, corev1.EventTypeNormal, v1alpha1.EventPartitionSet,
		"Canary deleted: StatefulSet %q is no longer held (partition %d → 0) and updates its pods by itself again", sts.Name, p)
	return nil
}

// resetApproval sets spec.approvedBatch back to 0 as a target's new release starts, with a JSON
// patch that tests the value read: a promote made meanwhile fails the test (the sync is retried
// from the Canary as it is then). cn takes the patched version, which the status write carries.
func (c *Controller) resetApproval(ctx context.Context, cn *v1alpha1.Canary, read int32) error {
	patch := fmt.Appendf(nil, `[{"op":"test","path":"/spec/approvedBatch","value":%d},{"op":"replace","path":"/spec/approvedBatch","value":0}]`, read)
	updated, err := c.client.AppsV1alpha1().Canaries(cn.Namespace).Patch(ctx, cn.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("setting spec.approvedBatch back to 0 for the new release: %w", staleIfInvalid(err))
	}
	cn.ResourceVersion, cn.Generation = updated.ResourceVersion, updated.Generation
	cn.Spec.ApprovedBatch = 0
	return nil
}
