package examples

import "testing"

// Canaries at the edge of a rule, that the CRD must accept: a rule that refuses them (or fails
// to evaluate on them) would refuse a release the agent runs.
func TestEdgeCasesAreAccepted(t *testing.T) {
	v := validator(t)
	for _, tt := range []struct{ name, spec string }{
		// Without spec.replicas a Deployment target's release shares out the Deployment's own
		// replicas, unknown to the API server: previewReplicas is capped at them by the agent.
		{"bluegreen-deployment-target-following-with-preview-replicas", `
  targetRef: {kind: Deployment, name: cart}
  blueGreen: {activeService: cart, previewService: cart-preview, previewReplicas: 1}`},
		{"bluegreen-deployment-target-replicas-zero-with-preview-replicas", `
  replicas: 0
  targetRef: {kind: Deployment, name: cart}
  blueGreen: {activeService: cart, previewService: cart-preview, previewReplicas: 1}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := []byte("apiVersion: apps.workload.dev/v1alpha1\nkind: Canary\nmetadata: {name: cart}\nspec:" + tt.spec + "\n")
			if errs := validate(t, v, doc); len(errs) > 0 {
				t.Errorf("refused: %v", errs.ToAggregate())
			}
		})
	}
}
