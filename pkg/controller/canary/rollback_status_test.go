package canary

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// An abort at the blue-green switch step, its post-promotion check still measuring, ends the
// step (RolledBack, as in every mode) and stops the check: the RolledBack Canary shows nothing
// as still Baking or Running.
func TestBlueGreenAbortAtTheSwitchEndsTheStepAndItsCheck(t *testing.T) {
	f := switchedWithPostCheck(t, 0)
	c := f.status(v1alpha1.CanaryProgressing, 2, C, Bk, P)
	if len(c.Status.Analysis) != 1 || c.Status.Analysis[0].Phase != v1alpha1.AnalysisRunning {
		t.Fatalf("analysis %+v, want health Running", c.Status.Analysis)
	}
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.step(patchActive, patchCanary+replicas(0), writeStatus)
	f.status(v1alpha1.CanaryRollingBack, 2, C, RB, P)
	f.available("checkout-canary", 0)
	f.step(writeStatus)
	c = f.status(v1alpha1.CanaryRolledBack, 2, C, RB, P)
	if st := c.Status.Analysis; len(st) != 1 || st[0].Phase != v1alpha1.AnalysisStopped {
		t.Fatalf("analysis %+v, want health Stopped", st)
	}
	f.step() // nothing more to write: the step and the check stay ended
}
