package canary

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// reconciler is the plan of one sync of one Canary: a pure function of what the sync observed
// (computePlan). It decides the batch state (status), the Deployment writes and the Events.
type reconciler struct {
	obs     *observed
	now     metav1.Time
	traffic *trafficPlan // nil without spec.trafficRouting (traffic.go)

	canary *v1alpha1.Canary      // the observed Canary; only its annotations change
	status v1alpha1.CanaryStatus // the batch state being computed

	steps     []step
	stable    *appsv1.Deployment // as it will be after the writes; nil when it does not exist
	canaryDep *appsv1.Deployment // as it will be after the writes; nil when there is none

	phase      v1alpha1.CanaryPhase
	reason     string // reason of the Progressing (or Degraded) condition
	message    string
	degraded   bool
	canaryNew  bool // the canary Deployment is created in this sync: its status says nothing yet
	stableRest bool // the stable Deployment is written in this sync: wait to see its status

	// stalled: the current step did not become available within spec.progressDeadlineSeconds;
	// deadlineMessage says so.
	stalled         bool
	deadlineMessage string
	// inconclusive says which checks hold the current step for a person.
	inconclusive string
	// requeueAfter is when the release must be looked at again though nothing it watches
	// changes (a timed pause ends, a check measures, a progress deadline passes); 0 for never.
	requeueAfter time.Duration

	// targetWrites are the writes of spec.targetRef's workload (target.go); stableRev is the
	// revision its release started from, abortedRevision the one a rollback this sync starts
	// leaves, retried that a retry writes the aborted revision back.
	targetWrites    []targetWrite
	resetApproval   int32 // spec.approvedBatch to set back to 0 as a target's new release starts
	stableRev       string
	abortedRevision string
	retried         bool
	// depWrites are the pauses and deletions of a Deployment target (deployment_target.go).
	depWrites []depTargetWrite

	// newSnapshot is the v1alpha1.AnnotationStableSnapshot to record on the Canary before any
	// Deployment is written ("" when it is there already).
	newSnapshot string
	// writes are the Deployment writes decided, in order.
	writes []deploymentWrite
	// events are the Events of the decisions, sent once the sync's status is committed.
	events []event
}

// step is one step of a release: the canary pods it holds and what it waits for once they are
// all available (its bake, see bake.go). spec.batches, spec.batchSizes and spec.pauseType are
// written as steps too (v1alpha1.CanarySteps).
type step struct {
	canaryReplicas int32
	// pause: the release waits for a promotion (spec.approvedBatch at least the step's number).
	pause bool
	// pauseFor is a timed pause: the release goes on by itself that long after the step's pods
	// are available (a promotion ends it sooner); 0 for none.
	pauseFor time.Duration
	// analysis names the checks of spec.analysis that run while the step bakes.
	analysis []string
	// subsets are the UnitedDeployment subsets the step releases (target_uniteddeployment.go).
	subsets []string
}

// bakes reports whether the step waits for anything once its pods are available.
func (s step) bakes() bool { return s.pauseFor > 0 || len(s.analysis) > 0 }

// stepsOf is the release spec describes (v1alpha1.CanarySteps).
func stepsOf(spec *v1alpha1.CanarySpec) ([]step, error) {
	plan, err := v1alpha1.CanarySteps(spec)
	if err != nil {
		return nil, err
	}
	steps := make([]step, len(plan))
	for i, s := range plan {
		steps[i] = step{canaryReplicas: s.Replicas, analysis: s.Analysis, subsets: s.Subsets}
		switch {
		case s.Pause == nil:
		case s.Pause.Duration != nil && s.Pause.Duration.Duration > 0:
			steps[i].pauseFor = s.Pause.Duration.Duration
		default:
			steps[i].pause = true
		}
	}
	return steps, nil
}

// event is one Event to record on the Canary.
type event struct{ eventType, reason, message string }

// writeKind says what a deploymentWrite does.
type writeKind int

const (
	createCanary writeKind = iota
	updateCanary
	scaleCanary
	scaleStable
	restoreStable
)

// deploymentWrite is one decided Deployment write: the object to create or update, or the patch
// of a scale or restore, and the replicas before and after (for its Event).
type deploymentWrite struct {
	kind     writeKind
	object   *appsv1.Deployment
	patch    []byte
	from, to int32
}

// computePlan decides, from what a sync observed, the batch state, the outcome and the writes.
func computePlan(obs *observed, now metav1.Time) *reconciler {
	r := &reconciler{obs: obs, now: now, canary: obs.canary, status: *obs.canary.Status.DeepCopy()}
	r.applyMeasurements()
	r.reconcile()
	r.planTraffic() // traffic.go: the HTTPRoute, and the writes traffic must precede
	return r
}

// reconcile decides the writes for the Canary (r.writes) and the outcome (r.status, r.phase,
// r.message), or why nothing can be done.
func (r *reconciler) reconcile() {
	cn := r.canary
	if isDeploymentTarget(cn) {
		r.reconcileDeploymentTarget() // deployment_target.go
		return
	}
	if cn.Spec.TargetRef != nil {
		r.reconcileTarget() // target.go
		return
	}
	steps, err := stepsOf(&cn.Spec)
	if err != nil {
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("invalid batch plan: %v", err))
		return
	}
	r.steps = steps

	if r.obs.stable == nil {
		if d := r.obs.canaryDep; d != nil && isOwnedBy(d, cn) {
			r.canaryDep = d
		}
		r.setDegraded(v1alpha1.ReasonStableNotFound, fmt.Sprintf(
			"stable Deployment %q not found in namespace %q: nothing is changed until it exists",
			cn.Spec.StableRef.Name, cn.Namespace))
		return
	}
	r.stable = r.obs.stable

	if d := r.obs.canaryDep; d != nil && !isOwnedBy(d, cn) {
		r.setDegraded(v1alpha1.ReasonCanaryNameConflict, fmt.Sprintf(
			"Deployment %q already exists and is not owned by this Canary: choose another spec.canary.name or delete that Deployment; nothing is changed until then",
			cn.Spec.Canary.Name))
		return
	}
	r.canaryDep = r.obs.canaryDep
	if r.degradedSpec() {
		return
	}
	r.retry()
	if cn.Spec.Rollback || r.aborted() {
		r.rollback()
		return
	}
	r.progress()
	if r.aborted() { // a check failed or the deadline passed with progressDeadlineAbort
		r.rollback()
	}
}

// degradedSpec records, and reports, a spec the canary Deployment cannot be made from.
func (r *reconciler) degradedSpec() bool {
	cn := r.canary

	if len(cn.Spec.Canary.Template.Labels) == 0 {
		r.setDegraded(v1alpha1.ReasonInvalidSpec,
			"spec.canary.template.metadata.labels is empty: the labels are the canary Deployment's selector")
		return true
	}
	if r.canaryDep != nil && !templateLabelsSelected(r.canaryDep.Spec.Selector, &cn.Spec.Canary.Template) {
		r.setDegraded(v1alpha1.ReasonSelectorMismatch, fmt.Sprintf(
			"the labels of spec.canary.template no longer match the selector of Deployment %q, which cannot change: restore the labels, or delete that Deployment to have it created again",
			cn.Spec.Canary.Name))
		return true
	}
	return false
}

// setDegraded records that the controller cannot act on the Canary and why. Nothing is written
// to any Deployment.
func (r *reconciler) setDegraded(reason, message string) {
	if r.status.Phase != v1alpha1.CanaryDegraded || r.status.Message != message {
		r.event(corev1.EventTypeWarning, reason, "%s", message)
	}
	r.degraded = true
	r.phase = v1alpha1.CanaryDegraded
	r.reason = reason
	r.message = message
}

// progress moves the release forward: it advances the batch state machine as far as the
// Deployments allow, then scales them to the current batch.
func (r *reconciler) progress() {
	cn := r.canary
	st := &r.status
	n := int32(len(r.steps))

	if wasRollingBack(st) {
		st.CurrentBatch = 0
		st.Batches = nil
		r.event(corev1.EventTypeNormal, v1alpha1.EventRestarted, "spec.rollback cleared: the release starts again from batch 1")
	}
	r.alignBatches()
	if st.CurrentBatch > n {
		st.CurrentBatch = n
	}

	if r.completed() && r.templateChangedAfterCompletion() {
		return
	}
	if cn.Spec.Paused && !r.completed() {
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonPausedBySpec
		if st.CurrentBatch == 0 {
			r.message = "paused by spec.paused before batch 1"
			return
		}
		r.move(r.canaryReplicas(), true)
		k := st.CurrentBatch
		r.message = fmt.Sprintf("paused by spec.paused at batch %d/%d: %d of %d canary pods available, stable at %d",
			k, n, r.canaryAvailable(), r.canaryReplicas(), r.stableReplicas())
		return
	}

	if st.CurrentBatch == 0 {
		if r.obs.target == nil {
			r.ensureSnapshot()
		}
		r.startBatch(1)
	}
	r.advance()
	k := st.CurrentBatch
	if !r.aborted() {
		r.checkDeadline(k)
	}
	if r.aborted() {
		return // reconcile rolls back: nothing of the forward plan is written
	}
	target := r.steps[k-1].canaryReplicas
	r.move(target, false)
	r.describeProgress(k, target)
}

// advance moves the batch state machine as far as the observed Deployments allow.
func (r *reconciler) advance() {
	st := &r.status
	n := int32(len(r.steps))
	for {
		k := st.CurrentBatch
		b := &st.Batches[k-1]
		next := false
		switch b.State {
		case v1alpha1.BatchPending:
			r.startBatch(k)
			continue
		case v1alpha1.BatchUpgrading:
			next = r.finishBatch(k, b)
		case v1alpha1.BatchBaking, v1alpha1.BatchPaused:
			if r.rebake(k, b) {
				break
			}
			next = r.bake(k, b)
		case v1alpha1.BatchCompleted:
			next = true
		}
		if !next || k >= n || r.aborted() {
			return
		}
		r.startBatch(k + 1)
	}
}

// finishBatch ends the upgrading batch k once it is done: paused for promotion or completed. It
// reports whether the next batch may start.
func (r *reconciler) finishBatch(k int32, b *v1alpha1.CanaryBatchStatus) bool {
	n := int32(len(r.steps))
	if !r.batchDone(k) {
		return false
	}
	b.FinishTime = r.now.DeepCopy()
	if s := r.steps[k-1]; s.bakes() || r.needsPause(k) {
		r.startBake(k, b)
		return r.bake(k, b)
	}
	b.State = v1alpha1.BatchCompleted
	r.event(corev1.EventTypeNormal, v1alpha1.EventBatchCompleted, "batch %d/%d complete with %d canary pods", k, n, r.steps[k-1].canaryReplicas)
	return true
}

// describeProgress sets the phase, reason and message of a release at batch k of target pods.
func (r *reconciler) describeProgress(k, target int32) {
	n := int32(len(r.steps))
	switch b := r.status.Batches[k-1]; {
	case r.stalled:
		r.phase, r.reason, r.message = v1alpha1.CanaryDegraded, v1alpha1.ReasonProgressDeadlineExceeded, r.deadlineMessage
	case b.State == v1alpha1.BatchBaking:
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBaking
		r.message = fmt.Sprintf("step %d/%d: %d of %d canary pods available, baking: %s", k, n, r.canaryAvailable(), target, r.bakeProgress(b))
	case b.State == v1alpha1.BatchPaused && r.inconclusive != "":
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonAnalysisInconclusive
		r.message = fmt.Sprintf("step %d/%d waits for a person: %s (kubectl workload promote accepts it, abort rolls back)", k, n, r.inconclusive)
	case b.State == v1alpha1.BatchPaused:
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonWaitingForPromotion
		r.message = fmt.Sprintf("batch %d/%d complete with %d canary pods: waiting for promotion (kubectl workload promote, or spec.approvedBatch=%d)",
			k, n, target, k)
	case b.State == v1alpha1.BatchCompleted && k == n && r.stableLeft() > 0:
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
		r.message = fmt.Sprintf("all %d batches complete: %d of %d canary pods available, waiting for the last %d stable pods to go",
			n, r.canaryAvailable(), target, r.stableLeft())
	case b.State == v1alpha1.BatchCompleted && k == n:
		if r.status.Phase != v1alpha1.CanaryCompleted {
			r.event(corev1.EventTypeNormal, v1alpha1.EventReleaseComplete, "all %d batches complete: the canary serves %d pods, no stable pod is left", n, target)
		}
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonCompleted
		r.message = fmt.Sprintf("all %d batches complete: %d of %d canary pods available, stable at %d",
			n, r.canaryAvailable(), target, r.stableReplicas())
	default:
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
		r.message = fmt.Sprintf("batch %d/%d: %d of %d canary pods available, stable at %d",
			k, n, r.canaryAvailable(), target, r.stableReplicas())
	}
}

// wasRollingBack reports whether the last sync was rolling back or had rolled back: by its phase,
// or, when a refused write made the phase Degraded, by its Progressing condition, which keeps
// what the release was doing.
func wasRollingBack(st *v1alpha1.CanaryStatus) bool {
	phase := st.Phase
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); phase == v1alpha1.CanaryDegraded && c != nil {
		phase = v1alpha1.CanaryPhase(c.Reason) // the reasons RollingBack and RolledBack are the phases'
	}
	return phase == v1alpha1.CanaryRollingBack || phase == v1alpha1.CanaryRolledBack
}

// completed reports whether every batch of the plan has completed.
func (r *reconciler) completed() bool {
	n := int32(len(r.steps))
	return r.status.CurrentBatch == n && r.status.Batches[n-1].State == v1alpha1.BatchCompleted
}

// alignBatches makes status.batches describe the plan: one entry per batch, in order, keeping
// the state and times already recorded.
func (r *reconciler) alignBatches() {
	old := map[int32]v1alpha1.CanaryBatchStatus{}
	for _, b := range r.status.Batches {
		old[b.Index] = b
	}
	batches := make([]v1alpha1.CanaryBatchStatus, len(r.steps))
	for i, st := range r.steps {
		size := st.canaryReplicas
		b, ok := old[int32(i+1)]
		if !ok {
			b = v1alpha1.CanaryBatchStatus{Index: int32(i + 1), State: v1alpha1.BatchPending}
		}
		b.CanaryReplicas = size
		batches[i] = b
	}
	r.status.Batches = batches
}

func (r *reconciler) startBatch(k int32) {
	st := &r.status
	for i := range st.Batches {
		if st.Batches[i].Index < k && st.Batches[i].State != v1alpha1.BatchCompleted {
			st.Batches[i].State = v1alpha1.BatchCompleted
		}
	}
	st.CurrentBatch = k
	b := &st.Batches[k-1]
	b.State = v1alpha1.BatchUpgrading
	b.StartTime = r.now.DeepCopy()
	b.FinishTime = nil
	r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted, "batch %d/%d started: %d canary pods", k, len(r.steps), r.steps[k-1].canaryReplicas)
}

// needsPause reports whether the release waits for promotion after batch k.
func (r *reconciler) needsPause(k int32) bool {
	return r.steps[k-1].pause && r.canary.Spec.ApprovedBatch < k
}

// batchDone reports whether batch k is complete: the canary Deployment runs exactly the batch's
// pods, from the current template, all of them available.
func (r *reconciler) batchDone(k int32) bool {
	if r.obs.target != nil {
		return r.targetStepDone(k)
	}
	d := r.canaryDep
	if d == nil || r.canaryNew {
		return false
	}
	target := r.steps[k-1].canaryReplicas
	return statusObserved(d) &&
		replicasOf(d) == target &&
		d.Annotations[v1alpha1.AnnotationTemplateHash] == r.templateHash() &&
		d.Spec.MinReadySeconds == r.canary.Spec.MinReadySeconds &&
		d.Status.Replicas == target &&
		d.Status.UpdatedReplicas == target &&
		d.Status.AvailableReplicas >= target
}

// canaryAvailable is the number of available canary pods.
func (r *reconciler) canaryAvailable() int32 {
	if t := r.obs.target; t != nil {
		return min(r.canaryReplicas(), t.state().available)
	}
	if r.canaryDep == nil || r.canaryNew {
		return 0
	}
	return r.canaryDep.Status.AvailableReplicas
}
