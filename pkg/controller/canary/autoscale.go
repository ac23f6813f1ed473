package canary

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// followTarget returns the Canary as a sync of an in-place release counts it: with spec.replicas
// left out (0), the total is the target's own replicas of this sync, so that an autoscaler
// scaling the workload moves the total, and every step's share of it, at the next sync
// (docs/canary.md, "Autoscaling"). The copy is the sync's only: the agent never writes
// spec.replicas, which stays the user's (or absent).
func followTarget(cn *v1alpha1.Canary, t targetWorkload) *v1alpha1.Canary {
	if cn.Spec.Replicas != 0 || t == nil {
		return cn
	}
	replicas := t.state().replicas
	if replicas == 0 {
		return cn
	}
	cp := cn.DeepCopy()
	cp.Spec.Replicas = replicas
	return cp
}

// fillScale fills what the Canary's scale subresource reads besides spec.replicas: the pods the
// release runs now, of either template, and, when a Deployment's selector picks them (both
// Deployments of a pair carry the stable Deployment's labels), that selector for an
// autoscaler's per-pod metrics.
func fillScale(st *v1alpha1.CanaryStatus, selector *metav1.LabelSelector) {
	st.Replicas = st.StableReplicas + st.CanaryReplicas
	st.Selector = ""
	if selector == nil {
		return
	}
	if sel, err := metav1.LabelSelectorAsSelector(selector); err == nil {
		st.Selector = sel.String()
	}
}
