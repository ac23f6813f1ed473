package canary

import (
	"strings"
	"testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The messages and Events of a blue-green release name its steps as `kubectl workload status`
// does ("step 1 (preview)"), never batches or spec.approvedBatch.
func TestBlueGreenMessagesNameTheSteps(t *testing.T) {
	f := blueGreenFixture(t, blueGreenCanary(nil))
	previewUp(f)
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryPaused, 1, Ps, P, P)
	want := "step 1 (preview) complete with 4 canary pods: waiting for promotion (kubectl workload promote)"
	if c.Status.Message != want {
		t.Errorf("message\n  got  %q\n  want %q", c.Status.Message, want)
	}
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchActive, writeStatus)
	c = f.status(v1alpha1.CanaryProgressing, 3, C, C, Bk)
	if !strings.HasPrefix(c.Status.Message, "step 3 (scale-down): ") {
		t.Errorf("message after the switch %q", c.Status.Message)
	}
	for _, e := range f.events() {
		if strings.Contains(e, "batch") {
			t.Errorf("event names a batch: %q", e)
		}
	}
}
