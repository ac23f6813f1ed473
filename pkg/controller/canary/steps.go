package canary

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// plan is the step machine of one sync of one Canary, the same for every release mode: it
// moves the release through its steps (batches, pauses, analysis, deadline, approvals) and
// calls the mode's releasePlan for what is the mode's (its course, the pods it moves, the
// capacity it counts, its status and writes). A pure function of what the sync observed
// (computePlan).
type plan struct {
	*decision
	rel releasePlan
	// backgroundHold are the inconclusive background checks that hold the current step until
	// a promotion; backgroundWaits says an unresolved background entry holds it regardless
	// (background.go).
	backgroundHold  []string
	backgroundWaits bool
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
	// subsets are the UnitedDeployment subsets the step releases (inplace_uniteddeployment.go).
	subsets []string
}

// bakes reports whether the step waits for anything once its pods are available.
func (s step) bakes() bool { return s.pauseFor > 0 || len(s.analysis) > 0 }

// stepsOf is the release spec describes (v1alpha1.CanarySteps).
func stepsOf(spec *v1alpha1.CanarySpec) ([]step, error) {
	planned, err := v1alpha1.CanarySteps(spec)
	if err != nil {
		return nil, err
	}
	steps := make([]step, len(planned))
	for i, s := range planned {
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

// computePlan decides, from what a sync observed, the batch state, the outcome and the writes.
func computePlan(obs *observed, now metav1.Time) *plan {
	d := &decision{obs: obs, now: now, canary: obs.canary, status: *obs.canary.Status.DeepCopy()}
	r := &plan{decision: d, rel: releaseFor(obs.canary).plan(d)}
	r.applyMeasurements()
	r.decide()
	r.rel.route()
	return r
}

// decide runs one sync's course: the release's begin chooses it, then the steps move, or the
// release holds its workload or rolls it back.
func (r *plan) decide() {
	steps, err := stepsOf(&r.canary.Spec)
	if err != nil {
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("invalid batch plan: %v", err))
		return
	}
	for i := range steps {
		steps[i].analysis = r.obs.analysis.expand(steps[i].analysis)
		if n := len(steps[i].analysis); n > v1alpha1.MaxStepChecks {
			r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("step %d runs %d checks once its templates are expanded, more than %d", i+1, n, v1alpha1.MaxStepChecks))
			return
		}
	}
	if bg := r.canary.Spec.BackgroundAnalysis; bg != nil && len(r.obs.analysis.expand(bg.Analysis)) > v1alpha1.MaxStepChecks {
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("backgroundAnalysis runs more than %d checks once its templates are expanded", v1alpha1.MaxStepChecks))
		return
	}
	r.steps = steps
	defer r.endStepOnRollback() // rollback_status.go
	switch r.rel.begin() {
	case holding:
		r.rel.hold()
	case rollingBack:
		r.rel.rollback()
	case progressing:
		r.progress()
		if r.aborted() { // a check failed or the deadline passed with progressDeadlineAbort
			r.rel.rollback()
			return
		}
		r.rel.settle()
	}
}

// progress moves the release forward: it advances the batch state machine as far as the
// Deployments allow, then scales them to the current batch.
func (r *plan) progress() {
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

	if r.completed() && r.rel.refuseAfterCompletion() {
		return
	}
	if cn.Spec.Paused && !r.completed() {
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonPausedBySpec
		if st.CurrentBatch == 0 {
			r.message = "paused by spec.paused before batch 1"
			return
		}
		r.rel.move(r.rel.canaryReplicas(), true)
		k := st.CurrentBatch
		r.message = fmt.Sprintf("paused by spec.paused at %s: %d of %d canary pods available, stable at %d",
			r.stepName(k), r.rel.canaryAvailable(), r.rel.canaryReplicas(), r.rel.stableReplicas())
		return
	}

	if st.CurrentBatch == 0 {
		r.rel.beforeFirstStep()
		r.startBatch(1)
	}
	r.backgroundHold, r.backgroundWaits = r.judgeBackground(st.CurrentBatch)
	if !r.aborted() {
		r.advance()
	}
	k := st.CurrentBatch
	if !r.aborted() {
		r.checkDeadline(k)
	}
	if r.aborted() {
		return // decide rolls back: nothing of the forward plan is written
	}
	target := r.steps[k-1].canaryReplicas
	r.rel.move(target, false)
	r.describeProgress(k, target)
}

// advance moves the batch state machine as far as the observed Deployments allow.
func (r *plan) advance() {
	st := &r.status
	n := int32(len(r.steps))
	for {
		k := st.CurrentBatch
		b := &st.Batches[k-1]
		next := false
		switch b.State {
		case v1alpha1.BatchPending, v1alpha1.BatchRolledBack: // ended by a rollback since undone
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
func (r *plan) finishBatch(k int32, b *v1alpha1.CanaryBatchStatus) bool {
	if !r.rel.stepDone(k) {
		return false
	}
	b.FinishTime = r.now.DeepCopy()
	if s := r.steps[k-1]; s.bakes() || r.needsPause(k) || len(r.backgroundHold) > 0 || r.backgroundWaits {
		r.startBake(k, b)
		return r.bake(k, b)
	}
	b.State = v1alpha1.BatchCompleted
	r.event(corev1.EventTypeNormal, v1alpha1.EventBatchCompleted, "%s complete with %d canary pods", r.stepName(k), r.steps[k-1].canaryReplicas)
	return true
}

// describeProgress sets the phase, reason and message of a release at batch k of target pods.
func (r *plan) describeProgress(k, target int32) {
	n := int32(len(r.steps))
	switch b := r.status.Batches[k-1]; {
	case r.stalled:
		r.phase, r.reason, r.message = v1alpha1.CanaryDegraded, v1alpha1.ReasonProgressDeadlineExceeded, r.deadlineMessage
	case b.State == v1alpha1.BatchBaking:
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBaking
		r.message = fmt.Sprintf("%s: %d of %d canary pods available, baking: %s", r.stepOf(k), r.rel.canaryAvailable(), target, r.bakeProgress(b))
	case b.State == v1alpha1.BatchPaused && r.inconclusive != "":
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonAnalysisInconclusive
		r.message = fmt.Sprintf("%s waits for a person: %s (kubectl workload promote accepts it, abort rolls back)", r.stepOf(k), r.inconclusive)
	case b.State == v1alpha1.BatchPaused:
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonWaitingForPromotion
		r.message = fmt.Sprintf("%s complete with %d canary pods: waiting for promotion (%s)", r.stepName(k), target, r.promoteHint(k))
	case b.State == v1alpha1.BatchCompleted && k == n && r.rel.stableLeft() > 0:
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
		r.message = fmt.Sprintf("all %d %s complete: %d of %d canary pods available, waiting for the last %d stable pods to go",
			n, r.stepsWord(), r.rel.canaryAvailable(), target, r.rel.stableLeft())
	case b.State == v1alpha1.BatchCompleted && k == n:
		if r.status.Phase != v1alpha1.CanaryCompleted {
			r.event(corev1.EventTypeNormal, v1alpha1.EventReleaseComplete, "all %d %s complete: the canary serves %d pods, no stable pod is left", n, r.stepsWord(), target)
		}
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonCompleted
		r.message = fmt.Sprintf("all %d %s complete: %d of %d canary pods available, stable at %d",
			n, r.stepsWord(), r.rel.canaryAvailable(), target, r.rel.stableReplicas())
	default:
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
		r.message = fmt.Sprintf("%s: %d of %d canary pods available, stable at %d",
			r.stepName(k), r.rel.canaryAvailable(), target, r.rel.stableReplicas())
	}
}

// alignBatches makes status.batches describe the plan: one entry per batch, in order, keeping
// the state and times already recorded.
func (r *plan) alignBatches() {
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

func (r *plan) startBatch(k int32) {
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
	r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted, "%s started: %d canary pods", r.stepName(k), r.steps[k-1].canaryReplicas)
}

// needsPause reports whether the release waits for promotion after batch k.
func (r *plan) needsPause(k int32) bool {
	return r.steps[k-1].pause && r.canary.Spec.ApprovedBatch < k
}
