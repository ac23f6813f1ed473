package canary

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// endStepOnRollback ends, once the release rolls back (spec.rollback or an abort), the step that
// was under way and the checks still measuring, the same in every release mode
// (docs/canary.md, "Rollback"): the step's state becomes RolledBack, a Running check Stopped. A
// step that completed and one never started keep their state, a check with a verdict keeps it.
// Nothing measures once the release rolls back (measure), so the Running they showed would
// never end.
func (r *decision) endStepOnRollback() {
	if !r.canary.Spec.Rollback && !r.aborted() {
		return
	}
	st := &r.status
	for i := range st.Batches {
		switch b := &st.Batches[i]; b.State {
		case v1alpha1.BatchUpgrading, v1alpha1.BatchBaking, v1alpha1.BatchPaused:
			b.State = v1alpha1.BatchRolledBack
		}
	}
	stopRunning(st.Analysis)
	stopRunning(st.BackgroundAnalysis)
}

// stopRunning marks the checks that have no verdict yet Stopped.
func stopRunning(checks []v1alpha1.AnalysisCheckStatus) {
	for i := range checks {
		if c := &checks[i]; c.Phase == v1alpha1.AnalysisRunning || c.Phase == "" {
			c.Phase = v1alpha1.AnalysisStopped
			c.Message = "stopped: the release rolled back"
		}
	}
}
