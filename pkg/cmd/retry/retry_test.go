package retry

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

// objects is a Canary in phase, aborted by itself (abort), or by a person (rollback), and a TApp.
func objects(phase v1alpha1.CanaryPhase, rollback, abort bool) []runtime.Object {
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: cmdtest.Namespace}}
	c.Spec.Replicas = 10
	c.Spec.StableRef.Name = "checkout-stable"
	c.Spec.Canary.Name = "checkout-canary"
	c.Spec.ApprovedBatch = 2
	c.Spec.Retries = 1
	c.Spec.Rollback = rollback
	c.Status.Phase = phase
	c.Status.CurrentBatch = 2
	c.Generation, c.Status.ObservedGeneration = 4, 4
	if !rollback && !abort && phase == v1alpha1.CanaryRolledBack {
		c.Generation = 5 // spec.rollback was cleared (or retries raised) after the agent last looked
	}
	if abort {
		c.Status.Abort = &v1alpha1.CanaryAbort{Reason: v1alpha1.ReasonAnalysisFailed, Step: 2, Check: "error-rate", Retries: 1}
	}
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: cmdtest.Namespace}}
	return []runtime.Object{c, tapp}
}

func TestRetry(t *testing.T) {
	tests := []struct {
		name            string
		phase           v1alpha1.CanaryPhase
		rollback, abort bool
		args            []string
	}{
		{"retry-aborted", v1alpha1.CanaryRolledBack, false, true, []string{"canary/checkout"}},
		{"retry-rolled-back", v1alpha1.CanaryRolledBack, true, false, []string{"canary/checkout"}},
		{"retry-dry-run-client", v1alpha1.CanaryRolledBack, false, true, []string{"canary/checkout", "--dry-run=client"}},
		{"error-not-aborted", v1alpha1.CanaryProgressing, false, false, []string{"canary/checkout"}},
		{"retry-already-retried", v1alpha1.CanaryRolledBack, false, false, []string{"canary/checkout"}},
		{"error-tapp", v1alpha1.CanaryRolledBack, false, true, []string{"tapp/web"}},
		{"error-extra-args", v1alpha1.CanaryRolledBack, false, true, []string{"canary/checkout", "now"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdRetry, objects(tt.phase, tt.rollback, tt.abort), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			if res.Code != 0 || strings.Contains(tt.name, "dry-run-client") || strings.Contains(tt.name, "already") {
				cmdtest.AssertUnchanged(t, res, objects(tt.phase, tt.rollback, tt.abort))
			}
		})
	}
}
