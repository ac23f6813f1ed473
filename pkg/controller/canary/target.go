package canary

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

// A Canary with spec.targetRef releases a workload in place (DESIGN §2.5,
// docs/canary-targets.md): between releases it holds the workload's partition at its replicas,
// so that a new pod template updates no pod; when the template changes (the update revision
// differs from the current one) it runs the same steps, pauses, analysis and deadline as a
// Deployment release, each step lowering the partition to replicas − the step's pods. The
// workload's own controller updates the pods, within its maxUnavailable. An abort writes the
// stable revision's template back (from the workload's revision history, as kubectl rollout
// undo does), which returns the updated pods to it.
//
// This file is the step machine's side, the same for every kind; what differs per kind (where
// the workload is read, how its partition and template are written) is a targetKind, one file
// per kind (target_statefulset.go, ...).

// targetState is a target workload as the step machine reads it, whatever its kind.
type targetState struct {
	// observed: the workload's controller has observed its latest spec, so the rest is current.
	observed bool
	// replicas is the workload's desired pod count; updated, available and ready count its pods.
	replicas, updated, available, ready int32
	// updateRevision is the revision of its current template; currentRevision the revision its
	// pods ran when its last update finished (equal once every pod runs the update revision).
	updateRevision, currentRevision string
	// held is the number of pods its partition keeps on the current revision.
	held int32
}

// targetKind is one kind of workload a Canary releases in place.
type targetKind interface {
	// get returns the workload from the agent's cache; nil (and no error) when it does not exist.
	get(namespace, name string) (targetWorkload, error)
	// reference records the workload a Canary targets (name "" for none) and reports whether it
	// is listed yet; forget drops a deleted Canary's reference.
	reference(canary cache.ObjectName, name string) bool
	forget(canary cache.ObjectName)
	// releaseHold, as a Canary is deleted, lets its workload update its pods by itself again when
	// no release is under way; mid-release it leaves the partition and says so with an Event.
	releaseHold(ctx context.Context, c *Controller, cn *v1alpha1.Canary) error
	// run starts what the kind watches by itself (nothing when it reads a shared informer).
	run(ctx context.Context)
}

// listedKind is embedded by the kinds read from a shared informer that lists every object of the
// kind (our own kinds, which the agent's controllers cache anyway): nothing to reference, forget
// or run.
type listedKind struct{}

func (listedKind) reference(cache.ObjectName, string) bool { return true }
func (listedKind) forget(cache.ObjectName)                 {}
func (listedKind) run(context.Context)                     {}

// listed turns what a lister's Get returns into what a targetKind's get does: NotFound is no
// workload (nil, nil), an object is wrapped.
func listed[T any](wrap func(T) targetWorkload) func(T, error) (targetWorkload, error) {
	return func(obj T, err error) (targetWorkload, error) {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return wrap(obj), nil
	}
}

// targetWorkload is one target workload as read by a sync.
type targetWorkload interface {
	metav1.Object
	state() targetState
	// unsupported says why a Canary cannot release the workload as it is configured ("" when
	// it can), and what to change.
	unsupported() string
	// write makes one decided write of the workload; it returns what it did, for the Event.
	write(ctx context.Context, c *Controller, cn *v1alpha1.Canary, w targetWrite) (string, error)
}

// stepCounter is a target whose steps may count their pods from the workload itself (a
// UnitedDeployment's steps that name subsets): countSteps sets each step's pods, or says why
// the steps do not fit the workload.
type stepCounter interface {
	countSteps(cn *v1alpha1.Canary, steps *[]step) string
}

// targetConverger is a target workload whose pods the agent moves itself rather than the
// workload's controller (a DaemonSet, held with updateStrategy OnDelete): after the plan's
// writes, converge moves them towards keep pods off the update revision, a few at a time within
// the workload's maxUnavailable, and says what it did ("" for nothing). held says the plan has
// just held the workload (its partition written), which the target as read does not show yet.
type targetConverger interface {
	converge(ctx context.Context, c *Controller, keep int32, held bool) (string, error)
}

// SetTargetKind gives the controller the source of one targetRef kind (its named watch or
// shared informer; a test's lister).
func (c *Controller) SetTargetKind(kind string, k targetKind) {
	if c.targets == nil {
		c.targets = map[string]targetKind{}
	}
	c.targets[kind] = k
}

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

// targetHandler enqueues the Canaries that target a workload of kind on its events.
func (c *Controller) targetHandler(kind string) cache.ResourceEventHandler {
	enqueue := func(obj interface{}) {
		o, err := expectations.ObjectFromDeleteEvent(obj)
		if err != nil {
			return
		}
		canaries, _ := c.canaryIndexer.ByIndex(targetIndex, targetKey(kind, o.GetNamespace(), o.GetName()))
		for _, cn := range canaries {
			c.Enqueue(cn)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
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

// observeTarget reads cn's target workload (nil when it does not exist) and who holds it.
func (c *Controller) observeTarget(obs *observed) error {
	cn := obs.canary
	kind, ok := c.targets[cn.Spec.TargetRef.Kind]
	if !ok {
		obs.targetKindMissing = true
		return nil
	}
	w, err := kind.get(cn.Namespace, cn.Spec.TargetRef.Name)
	if err != nil {
		return err
	}
	obs.target = w
	obs.targetHolder = c.holder(cn)
	return nil
}

// targetWriteKind says what a targetWrite does.
type targetWriteKind int

const (
	setPartition targetWriteKind = iota
	restoreTemplate
)

// targetWrite is one decided write of the target workload.
type targetWrite struct {
	kind      targetWriteKind
	partition int32  // setPartition: the pods kept on the current revision
	step      int32  // setPartition: the step it is for (0 between releases)
	revision  string // restoreTemplate: the revision whose template is written back
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
	if r.refuseTarget() {
		return
	}
	if sc, ok := r.obs.target.(stepCounter); ok {
		if msg := sc.countSteps(cn, &r.steps); msg != "" {
			r.setDegraded(v1alpha1.ReasonInvalidSpec, msg)
			return
		}
	}
	ts := r.obs.target.state()
	if !ts.observed {
		// The release's stable revision stays in the status: a workload whose current revision
		// is read from its pods (a DaemonSet's) could not tell it again in the middle of a
		// rollback, when the pods not yet rolled back look like the older revision.
		if prev := r.status.Target; prev != nil {
			r.stableRev = prev.StableRevision
		}
		r.phase, r.reason = r.status.Phase, v1alpha1.ReasonBatchUpgrading
		if r.phase == "" {
			r.phase = v1alpha1.CanaryProgressing
		}
		// Its status write, when it catches up, is an event of its watch: no polling.
		r.message = fmt.Sprintf("waiting for the %s controller to observe the latest spec of %q", cn.Spec.TargetRef.Kind, cn.Spec.TargetRef.Name)
		return
	}
	r.targetRetry()
	prev := r.status.Target
	update, current := ts.updateRevision, ts.currentRevision
	pending := update != current
	// tail: the last step moved every pod to the revision being released, which the workload
	// then made current: the release still finishes its last step (its bake).
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

// refuseTarget sets Degraded, and reports true, when the Canary cannot release its target:
// nothing is written then.
func (r *reconciler) refuseTarget() bool {
	cn, ref, t := r.canary, r.canary.Spec.TargetRef, r.obs.target
	switch {
	case r.obs.targetKindMissing:
		r.setDegraded(v1alpha1.ReasonTargetUnsupported, fmt.Sprintf(
			"this agent does not release targets of kind %s (its controller for them is not running)", ref.Kind))
	case t == nil:
		r.setDegraded(v1alpha1.ReasonTargetNotFound, fmt.Sprintf(
			"%s %q not found in namespace %q: nothing is changed until it exists", ref.Kind, ref.Name, cn.Namespace))
	case r.obs.targetHolder != "":
		r.setDegraded(v1alpha1.ReasonTargetHeld, fmt.Sprintf(
			"%s %q is released by Canary %q already: one Canary per workload; delete this one or that one", ref.Kind, ref.Name, r.obs.targetHolder))
	case t.unsupported() != "":
		r.setDegraded(v1alpha1.ReasonTargetUnsupported, t.unsupported())
	case t.state().replicas != cn.Spec.Replicas:
		n := t.state().replicas
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"spec.replicas is %d but %s %q has %d replicas: the steps count its pods; set spec.replicas to %d (nothing is changed until then)",
			cn.Spec.Replicas, ref.Kind, ref.Name, n, n))
	default:
		return false
	}
	return true
}

// releaseTarget moves a release of the target's update revision forward through the steps.
func (r *reconciler) releaseTarget(tail bool) {
	ts := r.obs.target.state()
	st := &r.status
	if !tail && (st.Target == nil || st.Target.UpdateRevision != ts.updateRevision) {
		// A new revision to release (or one changed mid-release): from step 1, every pause
		// waiting for a person again (the approvals were the last release's).
		st.CurrentBatch, st.Batches, st.Analysis = 0, nil, nil
		if r.canary.Spec.ApprovedBatch != 0 {
			r.resetApproval = r.canary.Spec.ApprovedBatch
			r.canary.Spec.ApprovedBatch = 0
		}
		r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted, "%s %q has a new revision %s: releasing it through the steps from revision %s",
			r.canary.Spec.TargetRef.Kind, r.obs.target.GetName(), ts.updateRevision, ts.currentRevision)
	}
	r.progress()
	if r.aborted() {
		r.rollbackTarget()
		return
	}
	if tail && r.completed() {
		r.stableRev = ts.updateRevision
		r.movePartition(0, false) // hold for the next release
	}
}

// movePartition sets the partition so that target pods run the update revision; with hold
// (spec.paused) the partition only rises.
func (r *reconciler) movePartition(target int32, hold bool) {
	want := max(0, r.canary.Spec.Replicas-target)
	cur := r.obs.target.state().held
	if want == cur || (hold && want < cur) {
		return
	}
	var step int32
	if target > 0 {
		step = r.status.CurrentBatch
	}
	r.targetWrites = append(r.targetWrites, targetWrite{kind: setPartition, partition: want, step: step})
}

// holdTarget keeps a target with nothing to release at partition = replicas, so that the next
// template change updates no pod until its release starts, and reports the last release.
func (r *reconciler) holdTarget() {
	ts := r.obs.target.state()
	st := &r.status
	kind, name := r.canary.Spec.TargetRef.Kind, r.obs.target.GetName()
	rolledBack := r.canary.Spec.Rollback || r.aborted()
	settled := ts.updated >= ts.replicas && ts.available >= ts.replicas && ts.updateRevision == ts.currentRevision
	if settled || !rolledBack {
		r.movePartition(0, false)
	}
	switch {
	case rolledBack && !settled:
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling %s %q back to revision %s: %d of %d pods on it, %d available",
			kind, name, ts.updateRevision, ts.updated, ts.replicas, ts.available)
	case rolledBack:
		if st.Phase != v1alpha1.CanaryRolledBack {
			r.event(corev1.EventTypeNormal, v1alpha1.EventRolledBack, "every pod of %s %q runs revision %s again", kind, name, ts.updateRevision)
		}
		r.phase, r.reason = v1alpha1.CanaryRolledBack, v1alpha1.ReasonRolledBack
		r.message = fmt.Sprintf("rolled back: every pod of %s %q runs revision %s; held at partition %d", kind, name, ts.updateRevision, ts.replicas)
	case st.CurrentBatch > 0 && len(r.steps) > 0:
		// The release ran its steps and the workload made the update revision current.
		n := int32(len(r.steps))
		for i := range st.Batches {
			st.Batches[i].State = v1alpha1.BatchCompleted
		}
		if st.Phase != v1alpha1.CanaryCompleted {
			r.event(corev1.EventTypeNormal, v1alpha1.EventReleaseComplete, "all %d steps complete: every pod of %s %q runs revision %s", n, kind, name, ts.currentRevision)
		}
		st.CurrentBatch = n
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonCompleted
		r.message = fmt.Sprintf("all %d steps complete: %d of %d pods of %s %q available on revision %s; held at partition %d until the next template change",
			n, ts.available, ts.replicas, kind, name, ts.currentRevision, ts.replicas)
	default:
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding
		r.message = fmt.Sprintf("holding %s %q at revision %s (partition %d): the next change of its pod template is released through the steps",
			kind, name, ts.currentRevision, ts.replicas)
	}
}

// rollbackTarget returns the target to the stable revision of the release: it writes that
// revision's template back, then the workload's controller returns the updated pods to it
// within its maxUnavailable; once they all run it, the target is held again.
func (r *reconciler) rollbackTarget() {
	ts := r.obs.target.state()
	kind, name := r.canary.Spec.TargetRef.Kind, r.obs.target.GetName()
	stable := r.stableRev
	reason := "spec.rollback is set"
	if a := r.status.Abort; a != nil && r.aborted() {
		reason = a.Reason
	}
	if ts.updateRevision != stable {
		if r.status.Phase != v1alpha1.CanaryRollingBack {
			r.event(corev1.EventTypeNormal, v1alpha1.EventRollingBack, "rolling %s %q back from revision %s to %s (%s)",
				kind, name, ts.updateRevision, stable, reason)
		}
		r.abortedRevision = ts.updateRevision
		r.targetWrites = append(r.targetWrites, targetWrite{kind: restoreTemplate, revision: stable, reason: reason})
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling %s %q back to revision %s (%s): writing its template back", kind, name, stable, reason)
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
	if r.obs.target.state().updateRevision != t.AbortedRevision {
		r.targetWrites = append(r.targetWrites, targetWrite{kind: restoreTemplate, revision: t.AbortedRevision, reason: "retry"})
	}
}

// executeTarget makes the target writes of a plan, stopping at the first the API server refuses,
// then lets a targetConverger move its pods. What the pods' move did goes into the Event of the
// plan's last write, or else only to the log: a DaemonSet's release deletes pods in many syncs,
// and an Event for each would use up the Events client-go lets through for the Canary (a burst
// of 25), dropping those of the release's steps and rollback.
func (c *Controller) executeTarget(ctx context.Context, r *reconciler) (*failure, error) {
	fail := func(err error) (*failure, error) {
		f := &failure{reason: v1alpha1.ReasonFailedUpdate, message: err.Error()}
		c.Recorder.Eventf(r.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
		return f, err
	}
	for i, w := range r.targetWrites {
		done, err := r.obs.target.write(ctx, c, r.canary, w)
		if err != nil {
			return fail(err)
		}
		if i == len(r.targetWrites)-1 {
			moved, err := c.convergeTarget(ctx, r)
			if err != nil {
				return fail(err)
			}
			if moved != "" {
				done += "; " + moved
			}
		}
		reason := v1alpha1.EventPartitionSet
		if w.kind == restoreTemplate {
			reason = v1alpha1.EventTemplateRestored
		}
		c.Recorder.Event(r.canary, corev1.EventTypeNormal, reason, done)
	}
	if len(r.targetWrites) > 0 {
		return nil, nil
	}
	moved, err := c.convergeTarget(ctx, r)
	if err != nil {
		return fail(err)
	}
	if moved != "" {
		klog.FromContext(ctx).V(2).Info("Moved the target's pods", "canary", klog.KObj(r.canary), "done", moved)
	}
	return nil, nil
}

// convergeTarget lets a targetConverger move its pods towards the partition the plan leaves
// (the one it wrote, or else the one held); while the release rolls back (the stable revision is
// the update one again) every pod goes to it. Not for a refused Canary, a target whose
// controller has not observed its spec, nor in a sync that wrote its template: the next sync
// reads the revision that write made. It says what it did ("" for nothing).
func (c *Controller) convergeTarget(ctx context.Context, r *reconciler) (string, error) {
	cv, ok := r.obs.target.(targetConverger)
	if !ok || r.degraded || !r.obs.target.state().observed {
		return "", nil
	}
	ts := r.obs.target.state()
	keep, held := ts.held, false
	for _, w := range r.targetWrites {
		if w.kind == restoreTemplate {
			return "", nil
		}
		keep, held = w.partition, true
	}
	if ts.updateRevision == r.stableRev {
		keep = 0
	}
	return cv.converge(ctx, c, keep, held)
}

// targetStatus fills the replica counts and status.target of a Canary with a target.
func targetStatus(r *reconciler, st *v1alpha1.CanaryStatus) {
	if r.obs.target == nil {
		st.Target = nil
		return
	}
	ts := r.obs.target.state()
	t := &v1alpha1.CanaryTargetStatus{
		StableRevision:    r.stableRev,
		UpdateRevision:    ts.updateRevision,
		Partition:         ts.held,
		UpdatedReplicas:   ts.updated,
		AvailableReplicas: ts.available,
	}
	if st.Target != nil {
		t.AbortedRevision, t.AbortedRetries = st.Target.AbortedRevision, st.Target.AbortedRetries
		if !ts.observed {
			// Its controller has not caught up with its spec: the revision being released stays
			// the one the last observed sync saw, so that the next one tells a new revision (a
			// DaemonSet's newest ControllerRevision is there before its status says so).
			t.UpdateRevision = st.Target.UpdateRevision
		}
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
	st.StableReplicas = max(0, ts.replicas-updated)
	st.CanaryAvailable = min(updated, ts.available)
	st.StableAvailable = ts.available - st.CanaryAvailable
}

// targetStepDone reports whether the target runs step k: the partition set for it, and its
// pods all available with the step's pods on the update revision.
func (r *reconciler) targetStepDone(k int32) bool {
	ts := r.obs.target.state()
	target := r.steps[k-1].canaryReplicas
	return ts.observed &&
		ts.held == max(0, r.canary.Spec.Replicas-target) &&
		ts.updated >= target &&
		ts.available >= ts.replicas &&
		ts.ready >= ts.replicas
}

// referenceTarget records the workload a Canary targets (none without spec.targetRef) with
// every kind's source; it reports whether it is listed.
func (c *Controller) referenceTarget(key cache.ObjectName, cn *v1alpha1.Canary) bool {
	listed := true
	for kind, k := range c.targets {
		name := ""
		if ref := cn.Spec.TargetRef; ref != nil && ref.Kind == kind {
			name = ref.Name
		}
		if !k.reference(key, name) {
			listed = false
		}
	}
	return listed
}

// forgetTarget drops a deleted Canary's references.
func (c *Controller) forgetTarget(key cache.ObjectName) {
	for _, k := range c.targets {
		k.forget(key)
	}
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
	if t := r.obs.target; t != nil {
		ts := t.state()
		if ts.updateRevision == r.stableRev {
			return 0
		}
		return ts.updated
	}
	return replicasOf(r.canaryDep)
}

// stableReplicas is the number of pods on the stable template.
func (r *reconciler) stableReplicas() int32 {
	if t := r.obs.target; t != nil {
		return max(0, t.state().replicas-r.canaryReplicas())
	}
	return replicasOf(r.stable)
}

// stableLeft is the number of stable pods the release still waits to go once its last step is
// complete (0 when none is left).
func (r *reconciler) stableLeft() int32 {
	if t := r.obs.target; t != nil {
		if ts := t.state(); ts.currentRevision == ts.updateRevision {
			return 0
		}
		return max(1, r.stableReplicas())
	}
	if stableGone(r.stable) {
		return 0
	}
	return max(podsOf(r.stable), 1)
}

// releaseHold, as a Canary with a target is deleted, lets the target go (targetKind.releaseHold)
// unless another Canary holds it.
func (c *Controller) releaseHold(ctx context.Context, cn *v1alpha1.Canary) error {
	ref := cn.Spec.TargetRef
	if ref == nil || c.holder(cn) != "" {
		return nil
	}
	if ref.Kind == TargetDeployment {
		return c.releaseDeploymentHold(ctx, cn) // deployment_target.go
	}
	kind, ok := c.targets[ref.Kind]
	if !ok {
		return nil
	}
	return kind.releaseHold(ctx, c, cn)
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
