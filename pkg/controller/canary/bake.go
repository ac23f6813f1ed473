package canary

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A step bakes once its pods are available: its timed pause runs and its checks measure
// (state Baking). The step then waits for a person when a check was inconclusive or when its
// pause has no duration (state Paused), and completes once nothing holds it. A promotion
// (spec.approvedBatch ≥ the step's number) ends a pause, timed or not, and accepts an
// inconclusive check, but never passes a check that is still measuring: only its verdict
// does. A failed check aborts the release (status.abort), whatever the state.

// startBake begins the bake of step k, whose pods just became available: the timed pause's
// end, and a fresh status for each of the step's checks.
func (r *plan) startBake(k int32, b *v1alpha1.CanaryBatchStatus) {
	s := r.steps[k-1]
	b.State = v1alpha1.BatchBaking
	b.PauseEndTime = nil
	if s.pauseFor > 0 {
		end := metav1.NewTime(r.now.Add(s.pauseFor))
		b.PauseEndTime = &end
	}
	r.status.Analysis = nil
	for _, name := range s.analysis {
		r.status.Analysis = append(r.status.Analysis, r.startCheck(name))
	}
	var what []string
	if s.pauseFor > 0 {
		what = append(what, "a pause of "+s.pauseFor.String())
	}
	if len(s.analysis) > 0 {
		what = append(what, "checks "+strings.Join(s.analysis, ", "))
	}
	if len(what) > 0 {
		r.event(corev1.EventTypeNormal, v1alpha1.ReasonBaking, "%s: %d canary pods available; baking: %s",
			r.stepOf(k), s.canaryReplicas, strings.Join(what, " and "))
	}
}

// startCheck is the fresh status of the check named name.
func (r *plan) startCheck(name string) v1alpha1.AnalysisCheckStatus {
	st := v1alpha1.AnalysisCheckStatus{Name: name, Phase: v1alpha1.AnalysisRunning}
	if check := r.check(name); check != nil {
		st = analysis.Start(check, r.now.Time)
		st.Template = r.obs.analysis.templateOf(name)
	}
	return st
}

// matchChecks makes status hold one entry per check step k runs: a template that appeared or
// changed while the step bakes brings checks of other names, which start now; those no
// longer run are dropped.
func (r *plan) matchChecks(k int32) {
	names := r.steps[k-1].analysis
	out := make([]v1alpha1.AnalysisCheckStatus, 0, len(names))
	for _, name := range names {
		if st := r.checkStatus(name); st != nil {
			out = append(out, *st)
		} else {
			out = append(out, r.startCheck(name))
		}
	}
	r.status.Analysis = out
}

// rebake sends a baking step back to Upgrading when spec.canary.template changed under it: its
// pause and checks judged pods of the old template, so they start again once the new
// template's pods are available. A step paused for a person stays paused (its pods roll).
func (r *plan) rebake(k int32, b *v1alpha1.CanaryBatchStatus) bool {
	if b.State != v1alpha1.BatchBaking || !r.rel.templateChanged() {
		return false
	}
	b.State, b.PauseEndTime, b.FinishTime = v1alpha1.BatchUpgrading, nil, nil
	b.StartTime = r.now.DeepCopy()
	r.status.Analysis = nil
	r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted,
		"%s starts again: spec.canary.template changed while it baked", r.stepOf(k))
	return true
}

// bake moves step k through its bake as far as the checks and the clock allow, and reports
// whether the step completed.
func (r *plan) bake(k int32, b *v1alpha1.CanaryBatchStatus) bool {
	s := r.steps[k-1]
	promoted := r.canary.Spec.ApprovedBatch >= k
	timed := s.pauseFor > 0 && !promoted && b.PauseEndTime != nil && r.now.Before(b.PauseEndTime)
	if timed {
		r.requeueAt(b.PauseEndTime.Time)
	}
	pauseOver := promoted || (!timed && !s.pause)

	measuring, inconclusive := r.judgeChecks(k, pauseOver, promoted)
	if r.aborted() {
		return false
	}
	wasPaused := b.State == v1alpha1.BatchPaused
	switch {
	case measuring || timed:
		b.State = v1alpha1.BatchBaking
		return false
	case len(inconclusive) > 0:
		b.State = v1alpha1.BatchPaused
		r.inconclusive = strings.Join(inconclusive, "; ")
		if !wasPaused {
			r.event(corev1.EventTypeWarning, v1alpha1.EventInconclusive,
				"%s waits for a person: %s (promote to accept, abort to roll back)", r.stepOf(k), r.inconclusive)
		}
		return false
	case s.pause && !promoted:
		b.State = v1alpha1.BatchPaused
		if !wasPaused {
			r.event(corev1.EventTypeNormal, v1alpha1.EventBatchPaused,
				"%s complete with %d canary pods: waiting for promotion (%s)", r.stepName(k), s.canaryReplicas, r.promoteHint(k))
		}
		return false
	}
	r.endBake(k, b, wasPaused, promoted)
	return true
}

// endBake completes step k and says why it could.
func (r *plan) endBake(k int32, b *v1alpha1.CanaryBatchStatus, wasPaused, promoted bool) {
	s := r.steps[k-1]
	b.State = v1alpha1.BatchCompleted
	switch {
	case promoted && (wasPaused || s.pauseFor > 0):
		r.event(corev1.EventTypeNormal, v1alpha1.EventPromoted, "%s promoted (spec.approvedBatch=%d)", r.stepName(k), r.canary.Spec.ApprovedBatch)
	case s.pauseFor > 0:
		r.event(corev1.EventTypeNormal, v1alpha1.EventPauseEnded, "%s: the pause of %s ended", r.stepOf(k), s.pauseFor)
	default:
		r.event(corev1.EventTypeNormal, v1alpha1.EventBatchCompleted, "%s complete with %d canary pods", r.stepName(k), s.canaryReplicas)
	}
}

// judgeChecks brings the verdicts of step k's checks up to date: a check that keeps measuring
// for as long as the step bakes is concluded once the pause is over; a failed check aborts the
// release. It reports whether a check is still measuring and which inconclusive checks (not
// accepted by a promotion) hold the step.
func (r *plan) judgeChecks(k int32, pauseOver, promoted bool) (measuring bool, inconclusive []string) {
	r.matchChecks(k)
	for _, name := range r.steps[k-1].analysis {
		st := r.checkStatus(name)
		check := r.check(name)
		if st == nil || check == nil {
			inconclusive = append(inconclusive, fmt.Sprintf("check %s is not in spec.analysis", name))
			continue
		}
		if u, ok := r.obs.analysis.why(name); ok {
			// A template missing or an argument unset: the step waits, it never passes.
			st.Phase, st.Message = v1alpha1.AnalysisRunning, u.message
			measuring = true
			continue
		}
		before := r.previousPhase(name)
		v := analysis.Assess(check, st, r.now.Time)
		if !v.Decided() && openEnded(check) && pauseOver && st.Count > 0 {
			v = analysis.Conclude(st)
		}
		st.Phase, st.Message = v.Phase, v.Message
		r.reportCheck(k, name, before, st)
		switch v.Phase {
		case v1alpha1.AnalysisRunning:
			if !openEnded(check) || pauseOver {
				measuring = true
			}
			r.requeueAt(r.nextMeasurement(name, v))
		case v1alpha1.AnalysisFailed:
			r.abort(v1alpha1.ReasonAnalysisFailed, name, fmt.Sprintf("check %s failed at step %d/%d: %s", name, k, len(r.steps), v.Message))
			return false, nil
		case v1alpha1.AnalysisInconclusive, v1alpha1.AnalysisError:
			if !promoted {
				inconclusive = append(inconclusive, fmt.Sprintf("check %s is %s: %s", name, v.Phase, v.Message))
			}
		}
	}
	if !promoted {
		inconclusive = append(inconclusive, r.backgroundHold...)
	}
	return measuring || r.backgroundWaits, inconclusive
}

// reportCheck sends the Event of a check that was just decided.
func (r *plan) reportCheck(k int32, name string, before v1alpha1.AnalysisPhase, st *v1alpha1.AnalysisCheckStatus) {
	if before == st.Phase || st.Phase != v1alpha1.AnalysisSuccessful {
		return // failures and inconclusive checks are reported by what they do to the release
	}
	r.event(corev1.EventTypeNormal, v1alpha1.EventAnalysisPassed, "%s: check %s passed: %s", r.stepOf(k), name, st.Message)
}

// previousPhase is the phase of the check named name in the status the sync read.
func (r *plan) previousPhase(name string) v1alpha1.AnalysisPhase {
	for _, st := range r.canary.Status.Analysis {
		if st.Name == name {
			return st.Phase
		}
	}
	return ""
}

// openEnded reports whether a check measures for as long as its step bakes (an interval and no
// count) rather than a fixed number of times.
func openEnded(check *v1alpha1.AnalysisCheck) bool {
	return check.Count == nil && check.Interval != nil
}

// nextMeasurement is when a running check measures next: as this sync's measurement said, or
// as its status says.
func (r *plan) nextMeasurement(name string, v analysis.Verdict) time.Time {
	if m, ok := r.obs.measured[name]; ok && !m.next.IsZero() {
		return m.next
	}
	return v.NextMeasurement
}

// check is the check of spec.analysis named name, nil when there is none.
func (r *plan) check(name string) *v1alpha1.AnalysisCheck {
	return r.obs.analysis.check(name)
}

// checkDeadline decides whether step k, still making its pods available, has taken longer than
// spec.progressDeadlineSeconds. The clock starts when the step starts or when the release last
// became Progressing (after spec.paused, a refused write), whichever is later; pauses and
// analysis are not counted, since they happen in other states.
func (r *plan) checkDeadline(k int32) {
	b := r.status.Batches[k-1]
	if b.State != v1alpha1.BatchUpgrading || b.StartTime == nil {
		return
	}
	prev := meta.FindStatusCondition(r.canary.Status.Conditions, v1alpha1.ConditionProgressing)
	exceeded := prev != nil && prev.Reason == v1alpha1.ReasonProgressDeadlineExceeded && prev.LastTransitionTime.After(b.StartTime.Time)
	if !exceeded {
		if prev == nil || prev.Status != metav1.ConditionTrue {
			return
		}
		since := b.StartTime.Time
		if prev.LastTransitionTime.After(since) {
			since = prev.LastTransitionTime.Time
		}
		deadline := since.Add(v1alpha1.CanaryProgressDeadline(&r.canary.Spec))
		if r.now.Before(&metav1.Time{Time: deadline}) {
			r.requeueAt(deadline)
			return
		}
	}
	r.stalled = true
	msg := fmt.Sprintf("%s did not become available within progressDeadlineSeconds (%s): %d of %d canary pods available, stable at %d",
		r.stepOf(k), v1alpha1.CanaryProgressDeadline(&r.canary.Spec), r.rel.canaryAvailable(), r.steps[k-1].canaryReplicas, r.rel.stableReplicas())
	if r.canary.Spec.ProgressDeadlineAbort {
		r.abort(v1alpha1.ReasonProgressDeadlineExceeded, "", msg)
		return
	}
	if !exceeded {
		r.event(corev1.EventTypeWarning, v1alpha1.EventDeadline, "%s", msg)
	}
	r.deadlineMessage = msg
}

// bakeProgress describes what step k's bake is waiting for: the rest of its pause and its
// checks' counts.
func (r *plan) bakeProgress(b v1alpha1.CanaryBatchStatus) string {
	var parts []string
	if b.PauseEndTime != nil && r.now.Before(b.PauseEndTime) && r.canary.Spec.ApprovedBatch < b.Index {
		// The end, not the time left: a message that changed every sync would be a status
		// write every sync.
		parts = append(parts, "pause until "+b.PauseEndTime.UTC().Format(time.RFC3339))
	}
	for _, st := range r.status.Analysis {
		parts = append(parts, fmt.Sprintf("check %s %s (%d measured, %d failed)", st.Name, st.Phase, st.Count, st.Failed))
	}
	if len(parts) == 0 {
		return "nothing left"
	}
	return strings.Join(parts, "; ")
}
