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
			var sizes []int32
			for i := 0; i < 40 && f.canary().Status.Phase != v1alpha1.CanaryCompleted; i++ {
				if n := specOf(f.deployment("checkout-canary")); len(sizes) == 0 || sizes[len(sizes)-1] != n {
					sizes = append(sizes, n)
				}
				f.playDeployments(tc.limit, 10)
				f.refresh()
				f.sync()
			}
			f.status(v1alpha1.CanaryCompleted, 1, C)
			if fmt.Sprint(sizes) != fmt.Sprint(tc.canary) {
				t.Errorf("canary sizes %v, want %v", sizes, tc.canary)
			}
		})
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
	var stable []int32
	for i := 0; i < 20 && f.canary().Status.Phase != v1alpha1.CanaryRolledBack; i++ {
		if n := specOf(f.deployment("checkout")); len(stable) == 0 || stable[len(stable)-1] != n {
			stable = append(stable, n)
		}
		f.playDeployments(12, 10)
		f.refresh()
		f.sync()
	}
	f.status(v1alpha1.CanaryRolledBack, 3, C, C, U, P)
	if fmt.Sprint(stable) != "[5 7 9 10]" {
		t.Errorf("stable sizes %v", stable)
	}
}

// A new canary template mid-release rolls with bounds from the budget: surge into the room
// left, and only unavailable pods removed.
func TestSurgeCanaryTemplateStrategy(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 6, func(c *v1alpha1.Canary) { c.Spec.MaxSurge = ptr.To(intstr.FromInt32(2)) })
	f.available("checkout", 6)
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 4, ReadyReplicas: 3, AvailableReplicas: 3}
	})
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Canary.Template.Spec.Containers[0].Image = "nginx:1.28" })
	f.step("update deployments checkout-canary", patchStable+replicas(7), writeStatus)
	ru := f.deployment("checkout-canary").Spec.Strategy.RollingUpdate
	if ru.MaxSurge.IntValue() != 2 || ru.MaxUnavailable.IntValue() != 1 {
		t.Errorf("canary rollout bounds: maxSurge %s, maxUnavailable %s; want 2 (12 − 6 − 4) and 1 (unavailable)", ru.MaxSurge, ru.MaxUnavailable)
	}
}
