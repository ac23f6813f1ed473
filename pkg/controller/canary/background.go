package canary

import (
	"fmt"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Background checks (spec.backgroundAnalysis) start with their starting step and run to the
// end of the release, in every state of it: between steps, while a step's pods roll, while it
// bakes. A failed one aborts the release at once. An inconclusive one holds every step from
// completing until a person promotes it (each step: the check stays inconclusive). When the
// last step completes, checks still measuring are concluded.

// judgeBackground brings the background checks' statuses and verdicts up to date at step k,
// aborting the release when one failed; it returns the inconclusive ones that hold step k
// until a promotion, and whether an unresolved entry (a template missing, an argument unset)
// holds it whatever a person says.
func (r *plan) judgeBackground(k int32) (holding []string, waiting bool) {
	bg := r.canary.Spec.BackgroundAnalysis
	if bg == nil || k < r.backgroundStart() {
		r.status.BackgroundAnalysis = nil
		return nil, false
	}
	names := r.obs.analysis.expand(bg.Analysis)
	out := make([]v1alpha1.AnalysisCheckStatus, 0, len(names))
	for _, name := range names {
		if st := findStatus(r.status.BackgroundAnalysis, name); st != nil {
			out = append(out, *st)
		} else {
			out = append(out, r.startCheck(name))
		}
	}
	r.status.BackgroundAnalysis = out
	done := r.completed()
	for i := range out {
		st := &r.status.BackgroundAnalysis[i]
		if u, ok := r.obs.analysis.why(st.Name); ok {
			st.Phase, st.Message = v1alpha1.AnalysisRunning, u.message
			waiting = true
			continue
		}
		check := r.check(st.Name)
		if check == nil {
			continue
		}
		v := analysis.Assess(check, st, r.now.Time)
		if !v.Decided() && done {
			v = analysis.Conclude(st)
		}
		st.Phase, st.Message = v.Phase, v.Message
		switch v.Phase {
		case v1alpha1.AnalysisRunning:
			r.requeueAt(r.nextMeasurement(backgroundKey+st.Name, v))
		case v1alpha1.AnalysisFailed:
			r.abort(v1alpha1.ReasonAnalysisFailed, st.Name, fmt.Sprintf("background check %s failed at step %d/%d: %s", st.Name, k, len(r.steps), v.Message))
			return nil, false
		case v1alpha1.AnalysisInconclusive, v1alpha1.AnalysisError:
			holding = append(holding, fmt.Sprintf("background check %s is %s: %s", st.Name, v.Phase, v.Message))
		}
	}
	return holding, waiting
}

// backgroundStart is the step background checks start with, within the release's steps.
func (r *plan) backgroundStart() int32 {
	start := int32(1)
	if s := r.canary.Spec.BackgroundAnalysis.StartingStep; s != nil {
		start = *s
	}
	return min(start, int32(len(r.steps)))
}
