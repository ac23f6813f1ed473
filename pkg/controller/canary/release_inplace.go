package canary

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A Canary whose spec.targetRef is a StatefulSet, TApp, UnitedDeployment or DaemonSet releases
// that workload in place (docs/canary-targets.md): between releases it holds the workload's
// partition at its replicas, so that a new pod template updates no pod; when the template
// changes (the update revision differs from the current one) it runs the same steps, pauses,
// analysis and deadline as a Deployment release, each step lowering the partition to
// replicas − the step's pods. The workload's own controller updates the pods, within its
// maxUnavailable. An abort writes the stable revision's template back (from the workload's
// revision history, as kubectl rollout undo does), which returns the updated pods to it.
//
// This file is the release mode, the same for every kind; what differs per kind (where the
// workload is read, how its partition and template are written) is a targetKind
// (inplace_kind.go), one file per kind (inplace_statefulset.go, ...).

// inPlaceRelease is the release mode of a workload released through its partition.
type inPlaceRelease struct{}

func (inPlaceRelease) deploymentNames(*v1alpha1.Canary) []string { return nil }

func (inPlaceRelease) target(cn *v1alpha1.Canary) *v1alpha1.CanaryTargetRef { return cn.Spec.TargetRef }

// observe reads the target workload (nil when it does not exist) and who holds it.
func (inPlaceRelease) observe(ctx context.Context, c *Controller, obs *observed) error {
	cn := obs.canary
	kind, ok := c.targets[cn.Spec.TargetRef.Kind]
	if !ok {
		obs.targetKindMissing = true
		return nil
	}
	w, err := kind.get(ctx, cn.Namespace, cn.Spec.TargetRef.Name)
	if err != nil {
		return err
	}
	obs.target = w
	obs.canary = followTarget(cn, w) // autoscale.go: the total, when spec.replicas is left out
	obs.targetHolder = c.holder(cn)
	return nil
}

func (inPlaceRelease) plan(d *decision) releasePlan {
	return &inPlacePlan{decision: d, target: d.obs.target}
}

// releaseHold lets the target go (releaseTargetHold) unless another Canary holds it.
func (inPlaceRelease) releaseHold(ctx context.Context, c *Controller, cn *v1alpha1.Canary) error {
	kind, ok := c.targets[cn.Spec.TargetRef.Kind]
	if !ok || c.holder(cn) != "" {
		return nil
	}
	return c.releaseTargetHold(ctx, kind, cn)
}

// inPlacePlan is the in-place release's side of one sync's plan.
type inPlacePlan struct {
	*decision
	target targetWorkload // as observed; nil when it does not exist

	// writes are the writes of the target decided, in order.
	writes []targetWrite
	// stableRev is the revision the release started from; abortedRevision the one a rollback
	// this sync starts leaves; retried says a retry writes the aborted revision back.
	stableRev       string
	abortedRevision string
	retried         bool
	// tail: the last step moved every pod to the revision being released, which the workload
	// then made current: the release still finishes its last step (its bake).
	tail bool
}

// begin refuses a target it cannot release, waits for the workload's controller to observe its
// spec, retries an aborted release on request, and chooses between rolling back, releasing the
// update revision, and holding the workload.
func (r *inPlacePlan) begin() course {
	cn := r.canary
	if r.refuseTarget() {
		return decided
	}
	if sc, ok := r.target.(stepCounter); ok {
		if msg := sc.countSteps(cn, &r.steps); msg != "" {
			r.setDegraded(v1alpha1.ReasonInvalidSpec, msg)
			return decided
		}
	}
	ts := r.target.state()
	if !ts.observed {
		r.waitObserved()
		return decided
	}
	r.targetRetry()
	prev := r.status.Target
	update, current := ts.updateRevision, ts.currentRevision
	pending := update != current
	r.tail = !pending && prev != nil && prev.UpdateRevision == update && prev.StableRevision != "" && prev.StableRevision != update
	// The stable revision is the one the release started from: kept while it runs, and while
	// it rolls back (when the restored template makes it the update revision again).
	rollback := cn.Spec.Rollback || r.aborted()
	known := prev != nil && prev.StableRevision != ""
	switch {
	case known && (rollback || r.tail || (pending && prev.UpdateRevision == update)):
		r.stableRev = prev.StableRevision
	default:
		r.stableRev = current
	}
	switch {
	case rollback:
		return rollingBack
	case pending || r.tail:
		r.startRelease()
		return progressing
	default:
		return holding
	}
}

// waitObserved says the release waits for the workload's controller to observe its spec.
func (r *inPlacePlan) waitObserved() {
	ref := r.canary.Spec.TargetRef
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
	r.message = fmt.Sprintf("waiting for the %s controller to observe the latest spec of %q", ref.Kind, ref.Name)
}

// refuseTarget sets Degraded, and reports true, when the Canary cannot release its target:
// nothing is written then.
func (r *inPlacePlan) refuseTarget() bool {
	cn, ref, t := r.canary, r.canary.Spec.TargetRef, r.target
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

// startRelease starts the release of a new update revision (or one changed mid-release) from
// step 1.
func (r *inPlacePlan) startRelease() {
	ts := r.target.state()
	if !r.tail && (r.status.Target == nil || r.status.Target.UpdateRevision != ts.updateRevision) {
		r.restart()
		r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted, "%s %q has a new revision %s: releasing it through the steps from revision %s",
			r.canary.Spec.TargetRef.Kind, r.target.GetName(), ts.updateRevision, ts.currentRevision)
	}
}

// settle holds the target for the next release once the tail of a release completed.
func (r *inPlacePlan) settle() {
	if r.tail && r.completed() {
		r.stableRev = r.target.state().updateRevision
		r.movePartition(0, false) // hold for the next release
	}
}

func (r *inPlacePlan) beforeFirstStep()             {}
func (r *inPlacePlan) refuseAfterCompletion() bool  { return false }
func (r *inPlacePlan) templateChanged() bool        { return false }
func (r *inPlacePlan) route()                       {}
func (r *inPlacePlan) move(target int32, hold bool) { r.movePartition(target, hold) }
func (r *inPlacePlan) hold()                        { r.holdTarget() }
func (r *inPlacePlan) rollback()                    { r.rollbackTarget() }

// canaryReplicas is the number of the target's pods on its update revision.
func (r *inPlacePlan) canaryReplicas() int32 {
	ts := r.target.state()
	if ts.updateRevision == r.stableRev {
		return 0
	}
	return ts.updated
}

// canaryAvailable is the number of available pods on the update revision.
func (r *inPlacePlan) canaryAvailable() int32 {
	return min(r.canaryReplicas(), r.target.state().available)
}

// stableReplicas is the number of the target's pods on the stable revision.
func (r *inPlacePlan) stableReplicas() int32 {
	return max(0, r.target.state().replicas-r.canaryReplicas())
}

// stableLeft is the number of stable pods the release still waits to go once its last step is
// complete (0 when none is left).
func (r *inPlacePlan) stableLeft() int32 {
	if ts := r.target.state(); ts.currentRevision == ts.updateRevision {
		return 0
	}
	return max(1, r.stableReplicas())
}

// movePartition sets the partition so that target pods run the update revision; with hold
// (spec.paused) the partition only rises.
func (r *inPlacePlan) movePartition(target int32, hold bool) {
	want := max(0, r.canary.Spec.Replicas-target)
	cur := r.target.state().held
	if want == cur || (hold && want < cur) {
		return
	}
	var step int32
	if target > 0 {
		step = r.status.CurrentBatch
	}
	r.writes = append(r.writes, targetWrite{kind: setPartition, partition: want, step: step})
}

// holdTarget keeps a target with nothing to release at partition = replicas, so that the next
// template change updates no pod until its release starts, and reports the last release.
func (r *inPlacePlan) holdTarget() {
	ts := r.target.state()
	st := &r.status
	kind, name := r.canary.Spec.TargetRef.Kind, r.target.GetName()
	rolledBack := r.canary.Spec.Rollback || r.aborted()
	settled := ts.updated >= ts.replicas && ts.available >= ts.replicas && ts.updateRevision == ts.currentRevision
	if settled || !rolledBack {
		r.movePartition(0, false)
	}
	switch {
	case rolledBack && !settled:
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling %s %q back to revision %s: %d of %d pods on it, %d available",
			kind, name, ts.updateRevision, ts.updated, ts.replicas, ts.available) + r.wavesNote()
	case rolledBack:
		if st.Phase != v1alpha1.CanaryRolledBack {
			r.event(corev1.EventTypeNormal, v1alpha1.EventRolledBack, "every pod of %s %q runs revision %s again", kind, name, ts.updateRevision)
		}
		r.phase, r.reason = v1alpha1.CanaryRolledBack, v1alpha1.ReasonRolledBack
		r.message = fmt.Sprintf("rolled back: every pod of %s %q runs revision %s; held at partition %d", kind, name, ts.updateRevision, ts.replicas) + r.wavesNote()
	case r.targetIncomplete(ts):
		r.waitForTarget(ts) // inplace_complete.go
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
func (r *inPlacePlan) rollbackTarget() {
	ts := r.target.state()
	kind, name := r.canary.Spec.TargetRef.Kind, r.target.GetName()
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
		r.writes = append(r.writes, targetWrite{kind: restoreTemplate, revision: stable, reason: reason})
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling %s %q back to revision %s (%s): writing its template back", kind, name, stable, reason) + r.wavesNote()
		return
	}
	r.holdTarget()
}

// clusterWaves is a target whose steps may be waves of member clusters (a UnitedDeployment's):
// it names the clusters the steps up to step released and those they never reached.
type clusterWaves interface {
	clusterWaves(cn *v1alpha1.Canary, step int32) (released, never []string)
}

// wavesNote says, while a release over member clusters rolls back and once it has, which
// clusters it had released (rolled back there) and which it never reached (left as they are);
// "" for any other target (docs/fleet.md, "Failure cases").
func (r *inPlacePlan) wavesNote() string {
	cw, ok := r.target.(clusterWaves)
	if !ok {
		return ""
	}
	step := r.status.CurrentBatch
	if a := r.status.Abort; a != nil && a.Step > 0 {
		step = a.Step
	}
	released, never := cw.clusterWaves(r.canary, step)
	note := ""
	if len(released) > 0 {
		note += "; released to clusters " + strings.Join(released, ", ") + " (rolled back there)"
	}
	if len(never) > 0 {
		note += "; never released: clusters " + strings.Join(never, ", ") + " (left as they are)"
	}
	return note
}

// targetRetry, once spec.retries rose above the retries of the last rollback (kubectl workload
// retry, after an abort by itself or on request), writes the aborted revision's template to the
// target again: its release then starts from step 1.
func (r *inPlacePlan) targetRetry() {
	if a := r.status.Abort; a != nil && a.Retries < r.canary.Spec.Retries {
		r.retry()
	}
	t := r.status.Target
	if t == nil || t.AbortedRevision == "" || r.canary.Spec.Rollback || r.aborted() || t.AbortedRetries >= r.canary.Spec.Retries {
		return
	}
	r.retried = true
	if r.target.state().updateRevision != t.AbortedRevision {
		r.writes = append(r.writes, targetWrite{kind: restoreTemplate, revision: t.AbortedRevision, reason: "retry"})
	}
}

// execute makes the target writes of a plan, stopping at the first the API server refuses,
// then lets a targetConverger move its pods. What the pods' move did goes into the Event of the
// plan's last write, or else only to the log: a DaemonSet's release deletes pods in many syncs,
// and an Event for each would use up the Events client-go lets through for the Canary (a burst
// of 25), dropping those of the release's steps and rollback.
func (r *inPlacePlan) execute(ctx context.Context, c *Controller) (*failure, error) {
	fail := func(err error) (*failure, error) {
		f := &failure{reason: v1alpha1.ReasonFailedUpdate, message: err.Error()}
		c.Recorder.Eventf(r.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
		return f, err
	}
	for i, w := range r.writes {
		done, err := r.target.write(ctx, c, r.canary, w)
		if err != nil {
			return fail(err)
		}
		if i == len(r.writes)-1 {
			moved, err := r.converge(ctx, c)
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
	if len(r.writes) > 0 {
		return nil, nil
	}
	moved, err := r.converge(ctx, c)
	if err != nil {
		return fail(err)
	}
	if moved != "" {
		klog.FromContext(ctx).V(2).Info("Moved the target's pods", "canary", klog.KObj(r.canary), "done", moved)
	}
	return nil, nil
}

// converge lets a targetConverger move its pods towards the partition the plan leaves
// (the one it wrote, or else the one held); while the release rolls back (the stable revision is
// the update one again) every pod goes to it. Not for a refused Canary, a target whose
// controller has not observed its spec, nor in a sync that wrote its template: the next sync
// reads the revision that write made. It says what it did ("" for nothing).
func (r *inPlacePlan) converge(ctx context.Context, c *Controller) (string, error) {
	cv, ok := r.target.(targetConverger)
	if !ok || r.degraded || !r.target.state().observed {
		return "", nil
	}
	ts := r.target.state()
	keep, held := ts.held, false
	for _, w := range r.writes {
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

// fillStatus fills the replica counts and status.target of a Canary with a target.
func (r *inPlacePlan) fillStatus(st *v1alpha1.CanaryStatus) {
	if r.target == nil {
		st.Target = nil
		return
	}
	if u, ok := r.target.(unreachableTarget); ok && st.Phase == v1alpha1.CanaryProgressing {
		if msg := u.unreachable(); msg != "" {
			st.Message += "; " + msg
		}
	}
	ts := r.target.state()
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
	for _, w := range r.writes {
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

// stepDone reports whether the target runs step k: the partition set for it, and its
// pods all available with the step's pods on the update revision.
func (r *inPlacePlan) stepDone(k int32) bool {
	ts := r.target.state()
	target := r.steps[k-1].canaryReplicas
	return ts.observed &&
		ts.held == max(0, r.canary.Spec.Replicas-target) &&
		ts.updated >= target &&
		ts.available >= ts.replicas &&
		ts.ready >= ts.replicas
}
