package workload

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestAbortCanary(t *testing.T) {
	ref := Ref{Kind: Canary, Name: "checkout"}
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout"}}
	c.Spec.StableRef.Name = "stable"
	change, err := AbortCanary(ref, toUnstructured(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if change.Patch == nil || string(change.Patch.Data) != `{"spec":{"rollback":true}}` || change.Patch.Type != "application/merge-patch+json" {
		t.Errorf("patch %v", change.Patch)
	}
	if change.Line != "canary/checkout aborted: rolling back to the stable Deployment stable" {
		t.Errorf("line %q", change.Line)
	}
	for phase, want := range map[v1alpha1.CanaryPhase]string{
		v1alpha1.CanaryRollingBack: "canary/checkout is already rolling back",
		v1alpha1.CanaryRolledBack:  "canary/checkout is already rolled back",
		"":                         "canary/checkout is already rolling back",
	} {
		c.Spec.Rollback, c.Status.Phase = true, phase
		change, err := AbortCanary(ref, toUnstructured(t, c))
		if err != nil || change.Patch != nil || change.Line != want {
			t.Errorf("phase %q: %+v %v, want no patch and %q", phase, change, err, want)
		}
	}
}
