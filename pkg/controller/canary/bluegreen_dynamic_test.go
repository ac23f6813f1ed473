package canary

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A stored blue-green Canary with dynamicStableScale (the schema refuses the pair now) keeps the
// old side whole at the switch: the switch writes the route alone, and an abort right after it
// switches back at once, without waiting for stable pods to come back.
func TestBlueGreenIgnoresDynamicStableScale(t *testing.T) {
	f := blueGreenRouteFixture(t, func(s *v1alpha1.CanarySpec) { s.DynamicStableScale = true })
	routePreviewUp(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.tstep() // the route as cached now gives the old side nothing: it still keeps every pod
	if n := replicasOf(f.deployment("checkout")); n != 4 {
		t.Fatalf("stable Deployment at %d after the switch, want 4 until the scale-down delay", n)
	}
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
}
