package canary

import (
	"fmt"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The words a Canary's messages and Events use for its steps: "batch k/n" and spec.approvedBatch
// for a release written as batches or steps, the step's name for a blue-green release ("step 1
// (preview)"), as `kubectl workload status` names it (docs/canary.md, "Blue-green").

// stepName names step k of the release.
func (r *decision) stepName(k int32) string {
	if r.canary.Spec.BlueGreen != nil {
		return r.stepOf(k)
	}
	return fmt.Sprintf("batch %d/%d", k, len(r.steps))
}

// stepOf names step k of the release where the messages say "step": "step k/n", or the
// blue-green step's name.
func (r *decision) stepOf(k int32) string {
	if name := v1alpha1.BlueGreenStepName(&r.canary.Spec, k); name != "" {
		return fmt.Sprintf("step %d (%s)", k, name)
	}
	return fmt.Sprintf("step %d/%d", k, len(r.steps))
}

// stepsWord is what the release is made of, in "all 3 batches complete".
func (r *decision) stepsWord() string {
	if r.canary.Spec.BlueGreen != nil {
		return "steps"
	}
	return "batches"
}

// promoteHint says how step k is promoted: the plugin's verb, and for batches the field it
// writes.
func (r *decision) promoteHint(k int32) string {
	if r.canary.Spec.BlueGreen != nil {
		return "kubectl workload promote"
	}
	return fmt.Sprintf("kubectl workload promote, or spec.approvedBatch=%d", k)
}
