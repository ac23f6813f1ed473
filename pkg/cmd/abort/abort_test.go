package abort

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

func objects(rollback bool, phase v1alpha1.CanaryPhase) []runtime.Object {
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: cmdtest.Namespace}}
	c.Spec.Replicas = 10
	c.Spec.StableRef.Name = "checkout-stable"
	c.Spec.Canary.Name = "checkout-canary"
	c.Spec.ApprovedBatch = 2
	c.Spec.Rollback = rollback
	c.Status.Phase = phase
	c.Status.CurrentBatch = 3
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: cmdtest.Namespace}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "front", Namespace: cmdtest.Namespace}}
	return []runtime.Object{c, tapp, deploy}
}

func TestAbort(t *testing.T) {
	tests := []struct {
		name     string
		rollback bool
		phase    v1alpha1.CanaryPhase
		args     []string
	}{
		{"abort-canary", false, v1alpha1.CanaryPaused, []string{"canary/checkout"}},
		{"abort-type-name-form", false, v1alpha1.CanaryProgressing, []string{"canary", "checkout"}},
		{"abort-completed", false, v1alpha1.CanaryCompleted, []string{"canaries/checkout"}},
		{"abort-already-rolling-back", true, v1alpha1.CanaryRollingBack, []string{"canary/checkout"}},
		{"abort-already-rolled-back", true, v1alpha1.CanaryRolledBack, []string{"canary/checkout"}},
		{"abort-dry-run-client", false, v1alpha1.CanaryPaused, []string{"canary/checkout", "--dry-run=client"}},
		{"abort-dry-run-server", false, v1alpha1.CanaryPaused, []string{"canary/checkout", "--dry-run=server"}},
		{"error-tapp", false, v1alpha1.CanaryPaused, []string{"tapp/web"}},
		{"error-deployment", false, v1alpha1.CanaryPaused, []string{"deploy/front"}},
		{"error-missing", false, v1alpha1.CanaryPaused, []string{"canary/nope"}},
		{"error-no-args", false, v1alpha1.CanaryPaused, nil},
		{"error-extra-args", false, v1alpha1.CanaryPaused, []string{"canary/checkout", "now"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdAbort, objects(tt.rollback, tt.phase), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			// The fake client ignores dryRun=All, so only a client dry run can be checked here.
			if res.Code != 0 || strings.Contains(tt.name, "already") || strings.Contains(tt.name, "dry-run-client") {
				cmdtest.AssertUnchanged(t, res, objects(tt.rollback, tt.phase))
			}
		})
	}
}

// The switch is really set in the stored object, and nothing else changes.
func TestAbortStored(t *testing.T) {
	res := cmdtest.Run(t, NewCmdAbort, objects(false, v1alpha1.CanaryPaused), "canary/checkout")
	obj := res.Stored(t, workload.Canary.Resource, "checkout")
	got, err := workload.AsCanary(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := objects(false, v1alpha1.CanaryPaused)[0].(*v1alpha1.Canary)
	want.Spec.Rollback = true
	if got.Spec.Rollback != true || got.Spec.ApprovedBatch != want.Spec.ApprovedBatch || got.Spec.StableRef != want.Spec.StableRef {
		t.Errorf("stored spec %+v, want %+v", got.Spec, want.Spec)
	}
}
