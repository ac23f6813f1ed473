package canary

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// With StableFollowsWholeSteps (the agent's), the stable Deployment gives its pods up once every
// canary pod of the scale-up is available, in one write, not one write per newly available pod;
// capacity stays at least spec.replicas throughout.
func TestStableFollowsWholeSteps(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	f.ctrl.wholeSteps = true
	f.step(addFinalizer, writeSnapshot, "create deployments checkout-canary", writeStatus)
	f.settled()
	f.available("checkout-canary", 1)
	f.step(patchStable+replicas(9), writeStatus) // batch 1's one pod: whole at once
	f.settled()
	f.available("checkout", 9)
	f.step(writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchCanary+replicas(4), writeStatus)
	f.settled()

	// Two, then three of the four canary pods available: the stable Deployment keeps its 9.
	f.available("checkout-canary", 2)
	f.step(writeStatus)
	f.available("checkout-canary", 3)
	f.step(writeStatus)
	if c := f.canary(); c.Status.StableReplicas != 9 || c.Status.CanaryAvailable+c.Status.StableAvailable < 10 {
		t.Errorf("mid-step: stable %d, available %d + %d", c.Status.StableReplicas, c.Status.CanaryAvailable, c.Status.StableAvailable)
	}
	// All four: batch 2 is whole, batch 3 starts (canary to 7) and one write gives the three
	// stable pods up, as without the option.
	f.available("checkout-canary", 4)
	f.step(patchCanary+replicas(7), patchStable+replicas(6), writeStatus)
	f.settled()
	// Batch 3 fills up: again no stable write until its 7 pods are all available.
	f.available("checkout-canary", 5)
	f.step(writeStatus)
	f.available("checkout-canary", 7)
	f.step(patchCanary+replicas(10), patchStable+replicas(3), writeStatus)
}
