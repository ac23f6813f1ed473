package canary

import (
	"fmt"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A Canary with a target says Completed only once its target is: every pod available on the
// revision it holds (docs/canary.md, "Completion"). A UnitedDeployment whose member clusters are
// out of reach counts none of their pods, so its Canary stays Progressing, naming them, for as
// long as they are; a pod that stops being available after completion is the workload's
// concern, not the release's, and does not take a Completed Canary back.

// targetIncomplete reports whether the target, which the release no longer moves, is not
// complete yet.
func (r *inPlacePlan) targetIncomplete(ts targetState) bool {
	if r.unreachableNote() != "" {
		return true
	}
	return r.status.Phase != v1alpha1.CanaryCompleted && ts.available < ts.replicas
}

// unreachableNote names the target's subsets in member clusters out of reach ("" for none).
func (r *inPlacePlan) unreachableNote() string {
	if u, ok := r.target.(unreachableTarget); ok {
		return u.unreachable()
	}
	return ""
}

// waitForTarget says the release waits for its target (fillStatus adds the unreachable
// clusters to the message).
func (r *inPlacePlan) waitForTarget(ts targetState) {
	kind, name := r.canary.Spec.TargetRef.Kind, r.target.GetName()
	r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
	if r.unreachableNote() != "" {
		r.reason = v1alpha1.ReasonClusterUnreachable
	}
	done := ""
	if n := len(r.steps); r.status.CurrentBatch > 0 && n > 0 {
		done = fmt.Sprintf("all %d steps released: ", n)
	}
	r.message = fmt.Sprintf("%s%s %q runs revision %s, %d of %d pods available: Completed once every pod is",
		done, kind, name, ts.currentRevision, ts.available, ts.replicas)
}
