package canary

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
)

// The surge bound end to end (docs/canary.md, "Surge bound"): 10 replicas jumping from 0 to 60% then 100% under
// a maxSurge of 2 pods or 30% (3). Every step is larger than the budget, so each is reached in
// sub-steps. Two watchers fail the test the moment a bound breaks: setup's (available stable +
// canary pods ≥ 10, and pods ≤ 10 + maxSurge) and test/invariant's Surge on the same pods.
func TestSurgeStepsJump(t *testing.T) {
	for _, tc := range []struct {
		maxSurge intstr.IntOrString
		surge    int32
	}{
		{intstr.FromInt32(2), 2},
		{intstr.FromString("30%"), 3},
	} {
		t.Run(tc.maxSurge.String(), func(t *testing.T) {
			e := setup(t)
			e.watchSurgeInvariant(replicas + tc.surge)
			e.createSteps("nginx:1.27", func(s *v1alpha1.CanarySpec) { s.MaxSurge = &tc.maxSurge },
				step(intstr.FromString("60%"), nil), step(intstr.FromString("100%"), nil))
			e.waitCanary("the end of the release", func(c *v1alpha1.Canary, stable, _ *appsv1.Deployment) bool {
				// Read first: Completed must mean that no stable pod is left.
				if c.Status.Phase == v1alpha1.CanaryCompleted && (stable.Status.Replicas != 0 || *stable.Spec.Replicas != 0) {
					t.Fatalf("Completed while the stable Deployment has %d pods (spec %d)", stable.Status.Replicas, *stable.Spec.Replicas)
				}
				return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.ObservedGeneration == c.Generation
			})
			canarySizes, stableSizes := e.watch.check()
			checkSubSteps(t, "canary", canarySizes, tc.surge, []int32{6, 10})
			if !nonIncreasing(stableSizes) || stableSizes[len(stableSizes)-1] != 0 {
				t.Errorf("stable Deployment sizes %v; want them decreasing to 0", stableSizes)
			}
		})
	}
}

// A rollback from the middle of a release (paused after the 60% step: 6 canary pods, 4 stable)
// under maxSurge 2: the stable Deployment grows back 2 pods at a time, the canary gives up what
// the available stable pods cover, and the release ends RolledBack without either bound broken.
func TestSurgeRollbackMidRelease(t *testing.T) {
	e := setup(t)
	e.watchSurgeInvariant(replicas + 2)
	surge := intstr.FromInt32(2)
	e.createSteps("nginx:1.27", func(s *v1alpha1.CanarySpec) { s.MaxSurge = &surge },
		step(intstr.FromString("60%"), &v1alpha1.CanaryPause{}), step(intstr.FromString("100%"), nil))
	e.waitCanary("the pause after step 1", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryPaused && c.Status.ObservedGeneration == c.Generation &&
			*canary.Spec.Replicas == 6 && stable.Status.Replicas == 4 && *stable.Spec.Replicas == 4
	})
	e.patchSpec(`{"rollback":true}`)
	e.waitRolledBack()
	canarySizes, stableSizes := e.watch.check()
	// The stable Deployment went down to 4 in sub-steps, then back up to 10 in sub-steps.
	low := slices.Index(stableSizes, 4)
	if low < 0 {
		t.Fatalf("stable sizes %v never reached 4", stableSizes)
	}
	checkSubSteps(t, "stable after the rollback", stableSizes[low:], 2, []int32{10})
	back := slices.Index(canarySizes, 6)
	if back < 0 || !nonIncreasing(canarySizes[back:]) || len(canarySizes[back:]) < 3 || canarySizes[len(canarySizes)-1] != 0 {
		t.Errorf("canary sizes %v: want them to reach 6, then shrink to 0 in sub-steps", canarySizes)
	}
}

// watchSurgeInvariant starts test/invariant's surge watcher on the pods of both Deployments,
// failing the test (and ending its waits) the moment more than limit exist.
func (e *env) watchSurgeInvariant(limit int32) {
	e.T.Helper()
	w := invariant.Surge(e.Ctx, e.Kube, e.NS, "app=checkout", int(limit))
	w.OnViolation(func(v string) {
		e.T.Errorf("surge invariant: %s", v)
		e.Cancel()
	})
	e.T.Cleanup(func() {
		w.Stop()
		if w.Events() == 0 {
			e.T.Errorf("the surge invariant watcher saw no pod change")
		}
		e.T.Logf("surge invariant watcher: %d pod states, most pods %s", w.Events(), w.Worst())
	})
}

// checkSubSteps checks successive sizes of a Deployment growing by sub-steps of at most surge
// pods, through each size of steps (a step's size is reached exactly before the next begins).
func checkSubSteps(t *testing.T, what string, sizes []int32, surge int32, steps []int32) {
	t.Helper()
	for i := 1; i < len(sizes); i++ {
		if d := sizes[i] - sizes[i-1]; d <= 0 || d > surge {
			t.Errorf("%s sizes %v: %d → %d is not a sub-step of 1 to %d pods", what, sizes, sizes[i-1], sizes[i], surge)
		}
	}
	for _, s := range steps {
		if !slices.Contains(sizes, s) {
			t.Errorf("%s sizes %v never held step size %d", what, sizes, s)
		}
	}
}
