package canary

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// surgeCanary is a release of every replica in one step under maxSurge.
func surgeCanary(maxSurge intstr.IntOrString) *v1alpha1.Canary {
	return stepsCanary(func(s *v1alpha1.CanarySpec) { s.MaxSurge = &maxSurge },
		v1alpha1.CanaryStep{Replicas: intstr.FromString("100%")})
}

// playDeployments plays kube-controller-manager at its fastest: both Deployments run their
// spec.replicas pods, all available, the ones scaled away gone. It checks the two bounds
// across the sync that just ran: the pods of both Deployments never above limit, and the
// pods still available after the scale-downs never below replicas.
func (f *fixture) playDeployments(limit, replicas int32) {
	f.t.Helper()
	stable, canary := f.deployment("checkout"), f.deployment("checkout-canary")
	if pods := specOf(stable) + specOf(canary); pods > limit {
		f.t.Fatalf("stable %d + canary %d pods > replicas + maxSurge = %d", specOf(stable), specOf(canary), limit)
	}
	if left := min(availableOf(stable), specOf(stable)) + min(availableOf(canary), specOf(canary)); left < replicas {
		f.t.Fatalf("%d pods left available < replicas %d (stable %d, canary %d)", left, replicas, specOf(stable), specOf(canary))
	}
	f.available("checkout", specOf(stable))
	if canary != nil {
		f.available("checkout-canary", specOf(canary))
	}
}

// playUntil syncs, with playDeployments(limit, 10) before each sync, until the Canary's phase
// is phase (at most 60 syncs), and returns the successive spec.replicas of Deployment name.
func (f *fixture) playUntil(phase v1alpha1.CanaryPhase, name string, limit int32) []int32 {
	f.t.Helper()
	var sizes []int32
	for i := 0; i < 60 && f.canary().Status.Phase != phase; i++ {
		if n := specOf(f.deployment(name)); len(sizes) == 0 || sizes[len(sizes)-1] != n {
			sizes = append(sizes, n)
		}
		f.playDeployments(limit, 10)
		f.refresh()
		f.sync()
	}
	return sizes
}

func specOf(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return *d.Spec.Replicas
}

func availableOf(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return d.Status.AvailableReplicas
}

// A step of every replica under maxSurge 2 is reached two pods at a time: the canary grows
// only into the room the stable pods already gone leave.
func TestSurgeSubSteps(t *testing.T) {
	for _, tc := range []struct {
		maxSurge intstr.IntOrString
		limit    int32
		canary   []int32 // successive canary sizes
	}{
		{intstr.FromInt32(2), 12, []int32{2, 4, 6, 8, 10}},
		{intstr.FromString("25%"), 13, []int32{3, 6, 9, 10}}, // 25% of 10 rounds up to 3
		{intstr.FromString("1%"), 11, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
	} {
		t.Run(tc.maxSurge.String(), func(t *testing.T) {
			f := newFixture(t, surgeCanary(tc.maxSurge), newStable(10))
			f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
			sizes := f.playUntil(v1alpha1.CanaryCompleted, "checkout-canary", tc.limit)
			f.status(v1alpha1.CanaryCompleted, 1, C)
			if fmt.Sprint(sizes) != fmt.Sprint(tc.canary) {
				t.Errorf("canary sizes %v, want %v", sizes, tc.canary)
			}
		})
	}
}

// A step smaller than the one before under a budget too small for the stable Deployment to
// take the difference back at once: the canary gives pods up as stable pods replace them, and
// the release goes on (it used to wait for a stable Deployment the budget kept from growing).
func TestSurgeSmallerStep(t *testing.T) {
	cn := stepsCanary(func(s *v1alpha1.CanarySpec) { s.MaxSurge = ptr.To(intstr.FromInt32(2)) },
		v1alpha1.CanaryStep{Replicas: intstr.FromInt32(7)}, v1alpha1.CanaryStep{Replicas: intstr.FromInt32(3)})
	f := newFixture(t, cn, newStable(10))
	f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	sizes := f.playUntil(v1alpha1.CanaryCompleted, "checkout-canary", 12)
	f.status(v1alpha1.CanaryCompleted, 3, C, C, C)
	if fmt.Sprint(sizes) != "[2 4 6 7 5 3 5 7 9 10]" {
		t.Errorf("canary sizes %v", sizes)
	}
}

// The exact writes of the first sub-steps, and terminating stable pods counted until gone.
func TestSurgeCountsTerminatingPods(t *testing.T) {
	f := newFixture(t, surgeCanary(intstr.FromInt32(2)), newStable(10))
	f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.step(patchStable+replicas(8), writeStatus)
	// Two stable pods are terminating: they still count, so the canary waits.
	f.editDeployment("checkout", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 8, UpdatedReplicas: 8,
			ReadyReplicas: 8, AvailableReplicas: 8, TerminatingReplicas: ptr.To[int32](2)}
	})
	f.step(writeStatus)
	f.settled()
	f.available("checkout", 8) // gone
	f.step(patchCanary+replicas(4), writeStatus)
}

// A rollback grows the stable Deployment within the budget and the canary gives up what the
// available stable pods cover, until stable serves every replica.
func TestSurgeRollback(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 3, U, 7, 3, func(c *v1alpha1.Canary) {
		c.Spec.MaxSurge = ptr.To(intstr.FromInt32(2))
		c.Spec.Rollback = true
	})
	f.available("checkout", 3)
	f.step(patchStable+replicas(5), writeStatus)
	stable := f.playUntil(v1alpha1.CanaryRolledBack, "checkout", 12)
	f.status(v1alpha1.CanaryRolledBack, 3, C, C, RB, P)
	if fmt.Sprint(stable) != "[5 7 9 10]" {
		t.Errorf("stable sizes %v", stable)
	}
}

// A new canary template mid-release rolls with bounds from the budget: surge into the room
// left once the stable Deployment took back what the unavailable canary pod no longer covers,
// and only unavailable pods removed.
func TestSurgeCanaryTemplateStrategy(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 6, func(c *v1alpha1.Canary) { c.Spec.MaxSurge = ptr.To(intstr.FromInt32(2)) })
	f.available("checkout", 6)
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 3, AvailableReplicas: 3}
	})
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Canary.Template.Spec.Containers[0].Image = "nginx:1.28" })
	f.step("update deployments checkout-canary", patchStable+replicas(7), writeStatus)
	ru := f.deployment("checkout-canary").Spec.Strategy.RollingUpdate
	if ru.MaxSurge.IntValue() != 1 || ru.MaxUnavailable.IntValue() != 1 {
		t.Errorf("canary rollout bounds: maxSurge %s, maxUnavailable %s; want 1 (12 − 7 − 4) and 1 (unavailable)", ru.MaxSurge, ru.MaxUnavailable)
	}
}

// Growing the stable Deployment back (canary pods stopped being available) has the first claim
// on the surge budget: the canary grows only into what is left.
func TestSurgeStableGrowsBackBeforeTheCanaryGrows(t *testing.T) {
	// Batch 3 (7 canary pods) under maxSurge 3: canary 4 (2 available), stable 7, 11 pods.
	f := midRelease(t, v1alpha1.PauseFirst, 3, U, 4, 7, func(c *v1alpha1.Canary) { c.Spec.MaxSurge = ptr.To(intstr.FromInt32(3)) })
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 })
	f.editDeployment("checkout", func(d *appsv1.Deployment) { d.Status.Replicas = 7; d.Status.AvailableReplicas = 7 })
	// Room 13 − 11 = 2: stable takes 1 back (to 8 = 10 − 2), the canary the 1 left.
	f.step(patchCanary+replicas(5), patchStable+replicas(8), writeStatus)
}

// While the canary Deployment rolls a template out with maxUnavailable 1, it may take one more
// available pod away: the stable Deployment gives up no pod for it until the rollout is done,
// and the pods of the rollout's surge count against the budget.
func TestSurgeCanaryRolloutCountsItsBounds(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 7, func(c *v1alpha1.Canary) { c.Spec.MaxSurge = ptr.To(intstr.FromInt32(2)) })
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) {
		d.Spec.Strategy = rollingStrategy(1, 1)
		// Rolling: 3 pods of the old template, 1 new; all 4 available now.
		d.Status = appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 4, AvailableReplicas: 4}
	})
	f.editDeployment("checkout", func(d *appsv1.Deployment) { d.Status.Replicas = 7; d.Status.AvailableReplicas = 7 })
	// Capacity counted: min(4 available, 4 − 1) = 3, and the stable has 7 = 10 − 3: no write.
	// Room: 12 − 7 − (4 + 1 of the rollout's surge) = 0: the canary does not grow either.
	f.step(writeStatus)
	f.settled()
	// The rollout is done: all 4 count, stable goes to 6; the rollout's surge is free again,
	// so the canary grows by 1 into it (12 − 7 − 4) while the stable pod goes.
	f.available("checkout-canary", 4)
	f.step(patchCanary+replicas(5), patchStable+replicas(6), writeStatus)
}

// A rollback under a percentage: 20% of 10 is 2 pods of room. The exact writes: stable grows
// by the room, the canary gives up only what available stable pods cover, and it goes to 0
// only once the stable Deployment serves every replica.
func TestSurgeRollbackExactWrites(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 3, U, 7, 3, func(c *v1alpha1.Canary) {
		c.Spec.MaxSurge = ptr.To(intstr.FromString("20%"))
		c.Spec.Rollback = true
	})
	f.available("checkout", 3)
	f.step(patchStable+replicas(5), writeStatus)
	f.status(v1alpha1.CanaryRollingBack, 3, C, C, RB, P)
	f.settled()
	// Three of the five stable pods available: the canary may go down to 10 − 3 = 7, which it is.
	f.editDeployment("checkout", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 5, UpdatedReplicas: 5, AvailableReplicas: 3}
	})
	f.step()
	f.available("checkout", 5)
	f.step(patchCanary+replicas(5), writeStatus)
	// The two canary pods are terminating: they still count, the stable waits.
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{Replicas: 5, UpdatedReplicas: 5, AvailableReplicas: 5, TerminatingReplicas: ptr.To[int32](2)}
	})
	// The status counted 5 available already: the 2 pods above the spec may be available ones.
	f.settled()
	f.available("checkout-canary", 5)
	f.step(patchStable+replicas(7), writeStatus)
	f.available("checkout", 7)
	f.step(patchCanary+replicas(3), writeStatus)
	f.available("checkout-canary", 3)
	f.step(patchStable+replicas(9), writeStatus)
	f.available("checkout", 9)
	f.step(patchCanary+replicas(1), writeStatus)
	f.available("checkout-canary", 1)
	f.step(patchStable+replicas(10), writeStatus)
	// Stable at full size but not all available yet: the canary keeps its last pod.
	f.editDeployment("checkout", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 10, UpdatedReplicas: 10, AvailableReplicas: 9}
	})
	f.step()
	f.canaryGoes(3, C, C, RB, P)
}

// canaryGoes plays the end of a rollback at batch current: all 10 stable pods become available,
// then the canary Deployment is scaled to 0, and once its pods are gone the Canary is RolledBack.
func (f *fixture) canaryGoes(current int32, states ...v1alpha1.BatchState) {
	f.t.Helper()
	f.available("checkout", 10)
	f.step(patchCanary+replicas(0), writeStatus)
	f.available("checkout-canary", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryRolledBack, current, states...)
	f.settled()
}
