// Package canary runs Canary releases end to end: the workload-agent (canary controller only)
// against the local control plane, where kube-controller-manager runs the Deployments and kwok
// the pods. A watcher on the Deployments fails a test the moment available stable plus canary
// pods drop below spec.replicas, during a release or a rollback.
package canary

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	// Autoscaling: the HorizontalPodAutoscaler tests (hpa_test.go) need the HPA controller and the
	// aggregation layer; with no HorizontalPodAutoscaler the others do not notice them.
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.RepoPath("config", "crd"), Autoscaling: true})
}

// 10 replicas in 4 batches (1, 4, 7, 10 canary pods) with each pauseType: the release pauses
// exactly where pauseType says, the stable Deployment gives up pods only as canary pods become
// available, and it ends with 10 canary pods and an empty stable Deployment.
func TestReleaseInFourBatches(t *testing.T) {
	for _, tc := range []struct {
		pause  v1alpha1.PauseType
		pauses []int32
	}{
		{v1alpha1.PauseFirst, []int32{1}},
		{v1alpha1.PauseAll, []int32{1, 2, 3}},
		{v1alpha1.PauseNone, nil},
	} {
		t.Run(string(tc.pause), func(t *testing.T) {
			e := setup(t)
			e.createCanary(tc.pause, 1)

			var pauses []int32
			for {
				c := e.waitCanary("a pause or the end of the release", func(c *v1alpha1.Canary, stable, _ *appsv1.Deployment) bool {
					// The Canary is read first: Completed must mean that no stable pod is left.
					if c.Status.Phase == v1alpha1.CanaryCompleted && (stable.Status.Replicas != 0 || *stable.Spec.Replicas != 0) {
						t.Fatalf("Completed while the stable Deployment has %d pods (spec %d)", stable.Status.Replicas, *stable.Spec.Replicas)
					}
					k := waitingBatch(c)
					return (k > 0 && !slices.Contains(pauses, k)) || c.Status.Phase == v1alpha1.CanaryCompleted
				})
				if c.Status.Phase == v1alpha1.CanaryCompleted {
					break
				}
				k := waitingBatch(c)
				pauses = append(pauses, k)
				// At a pause the batch is complete, and the stable Deployment holds the rest.
				stable, canary, err := e.deployments()
				if err != nil {
					t.Fatal(err)
				}
				if got := *canary.Spec.Replicas; got != plan[k-1] || canary.Status.AvailableReplicas < plan[k-1] {
					t.Errorf("paused at batch %d with canary %d/%d available; want %d", k, canary.Status.AvailableReplicas, got, plan[k-1])
				}
				if got := *stable.Spec.Replicas; got != replicas-plan[k-1] {
					t.Errorf("paused at batch %d with stable at %d; want %d", k, got, replicas-plan[k-1])
				}
				e.promote(c)
			}
			if !slices.Equal(pauses, tc.pauses) {
				t.Errorf("paused after batches %v; want %v", pauses, tc.pauses)
			}

			c := e.waitCanary("the stable pods to be gone", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
				return stable.Status.Replicas == 0 && canary.Status.AvailableReplicas == replicas
			})
			checkCompleted(t, c)
			canarySizes, stableSizes := e.watch.check()
			if !slices.Equal(canarySizes, plan) {
				t.Errorf("canary Deployment sizes %v; want %v", canarySizes, plan)
			}
			if !nonIncreasing(stableSizes) || stableSizes[len(stableSizes)-1] != 0 {
				t.Errorf("stable Deployment sizes %v; want them decreasing to 0", stableSizes)
			}
		})
	}
}

func checkCompleted(t *testing.T, c *v1alpha1.Canary) {
	t.Helper()
	st := c.Status
	if st.Phase != v1alpha1.CanaryCompleted || st.CurrentBatch != 4 || len(st.Batches) != 4 {
		t.Fatalf("not completed:\n%s", describe(c))
	}
	for i, b := range st.Batches {
		if b.State != v1alpha1.BatchCompleted || b.CanaryReplicas != plan[i] || b.StartTime == nil || b.FinishTime == nil || b.FinishTime.Before(b.StartTime) {
			t.Errorf("batch %d: %+v", i+1, b)
		}
	}
}

// Two promotes of the same paused batch sent at the same moment: one applies, the other fails
// its test precondition, and the release advances exactly one batch.
func TestConcurrentPromotesAdvanceOneBatch(t *testing.T) {
	e := setup(t)
	e.createCanary(v1alpha1.PauseAll, 1)
	c := e.waitCanary("the pause after batch 1", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 1
	})

	patch := promotePatch(c.Spec.ApprovedBatch, 1)
	start := make(chan struct{})
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			<-start
			_, errs[i] = e.Apps.AppsV1alpha1().Canaries(e.NS).Patch(e.Ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
		})
	}
	close(start)
	wg.Wait()
	applied := 0
	for _, err := range errs {
		switch {
		case err == nil:
			applied++
		case apierrors.IsInvalid(err): // 422: the JSON patch test failed
		default:
			t.Fatalf("promote: %v", err)
		}
	}
	if applied != 1 {
		t.Fatalf("%d of two racing promotes applied (%v); want exactly one", applied, errs)
	}
	// A promote built from the value read before the race cannot apply any more either.
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Patch(e.Ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a stale promote: %v; want its test to fail", err)
	}

	c = e.waitCanary("the pause after batch 2", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 2
	})
	if c.Spec.ApprovedBatch != 1 {
		t.Errorf("approvedBatch %d; want 1", c.Spec.ApprovedBatch)
	}
	// It stays at batch 2: nothing approved it.
	time.Sleep(3 * time.Second)
	c = e.canary()
	stable, canary, err := e.deployments()
	if err != nil {
		t.Fatal(err)
	}
	if waitingBatch(c) != 2 || *canary.Spec.Replicas != plan[1] || *stable.Spec.Replicas != replicas-plan[1] {
		t.Fatalf("moved past batch 2 (canary %d, stable %d):\n%s", *canary.Spec.Replicas, *stable.Spec.Replicas, describe(c))
	}
	if sizes, _ := e.watch.check(); !slices.Equal(sizes, plan[:2]) {
		t.Errorf("canary Deployment sizes %v; want %v", sizes, plan[:2])
	}
}

// Rollback from batch 3 (7 canary pods, 3 stable): the stable Deployment is back at 10 available
// pods before any canary pod goes, and the release ends RolledBack with the stable Deployment
// at full size on its own template.
func TestRollbackFromBatch3(t *testing.T) {
	e := setup(t)
	e.createCanary(v1alpha1.PauseAll, 1)
	for k := int32(1); k <= 2; k++ {
		c := e.waitCanary("a pause", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool { return waitingBatch(c) == k })
		e.promote(c)
	}
	e.waitCanary("the pause after batch 3", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool { return waitingBatch(c) == 3 })

	e.patchSpec(`{"rollback":true}`)
	c := e.waitRolledBack()
	if c.Status.CurrentBatch != 3 {
		t.Errorf("currentBatch %d after the rollback; want 3 (where it was)", c.Status.CurrentBatch)
	}
	e.checkRollbackOrder()
}

// Rollback after completion, when the stable Deployment's template was changed since the release
// began (here to the canary's image, as a team "finishing" a release would): the template of
// the beginning is restored and the stable Deployment is back at full size before the canary
// goes.
func TestRollbackAfterCompletion(t *testing.T) {
	e := setup(t)
	e.createCanary(v1alpha1.PauseNone, 1)
	e.waitCanary("the end of the release", func(c *v1alpha1.Canary, stable, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && stable.Status.Replicas == 0
	})
	_, err := e.Kube.AppsV1().Deployments(e.NS).Patch(e.Ctx, stableName, types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}

	e.patchSpec(`{"rollback":true}`)
	e.waitRolledBack()
	e.checkRollbackOrder()
}

// waitRolledBack waits for RolledBack and checks the Deployments: stable at full size on the
// template it had when the release began, all available; canary at 0 with no pod left.
func (e *env) waitRolledBack() *v1alpha1.Canary {
	e.T.Helper()
	c := e.waitCanary("the end of the rollback", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.ObservedGeneration == c.Generation &&
			canary.Status.Replicas == 0
	})
	stable, canary, err := e.deployments()
	if err != nil {
		e.T.Fatal(err)
	}
	if *stable.Spec.Replicas != replicas || stable.Status.AvailableReplicas != replicas || stable.Status.UpdatedReplicas != replicas {
		e.T.Errorf("stable after the rollback: %d replicas, %d updated, %d available; want %d of each",
			*stable.Spec.Replicas, stable.Status.UpdatedReplicas, stable.Status.AvailableReplicas, replicas)
	}
	if img := stable.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" {
		e.T.Errorf("stable image %s after the rollback; want nginx:1.26, as when the release began", img)
	}
	if *canary.Spec.Replicas != 0 {
		e.T.Errorf("canary at %d after the rollback; want 0", *canary.Spec.Replicas)
	}
	if c.Status.StableAvailable != replicas || c.Status.CanaryReplicas != 0 {
		e.T.Errorf("status counts after the rollback:\n%s", describe(c))
	}
	return c
}

// checkRollbackOrder checks, from the watcher, that capacity held and that the canary
// Deployment shrank once, to 0, when all 10 stable pods were available.
func (e *env) checkRollbackOrder() {
	e.T.Helper()
	canarySizes, _ := e.watch.check()
	if canarySizes[len(canarySizes)-1] != 0 {
		e.T.Errorf("canary sizes %v; want them to end at 0", canarySizes)
	}
	w := e.watch
	if len(w.canaryShrankAt) != 1 || !strings.HasSuffix(w.canaryShrankAt[0], "with 10 stable available") {
		e.T.Errorf("canary scale-downs: %q; want one, with 10 stable pods available", w.canaryShrankAt)
	}
}

// spec.paused set in the middle of batch 2 (its 4 canary pods not yet available, as
// minReadySeconds is 5): the batch neither completes nor takes stable pods while paused, even
// once its pods are available; resumed, the release carries on to the end.
func TestPauseAndResumeMidBatch(t *testing.T) {
	e := setup(t)
	e.createCanary(v1alpha1.PauseFirst, 5)
	c := e.waitCanary("the pause after batch 1", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool { return waitingBatch(c) == 1 })
	e.promote(c)
	e.waitCanary("batch 2 to start", func(c *v1alpha1.Canary, _, canary *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 2 && *canary.Spec.Replicas == plan[1]
	})
	e.patchSpec(`{"paused":true}`)
	c = e.waitCanary("the pause", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryPaused && c.Status.ObservedGeneration == c.Generation
	})
	if b := c.Status.Batches[1]; c.Status.CurrentBatch != 2 || b.State != v1alpha1.BatchUpgrading {
		t.Fatalf("batch 2 is not held mid-way:\n%s", describe(c))
	}

	// The 4 canary pods become available while paused; nothing moves.
	e.waitDeployments("the 4 canary pods to be available", func(_, canary *appsv1.Deployment) bool {
		return canary.Status.AvailableReplicas == plan[1]
	})
	time.Sleep(2 * time.Second)
	c = e.canary()
	stable, canary, err := e.deployments()
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.CurrentBatch != 2 || c.Status.Batches[1].State != v1alpha1.BatchUpgrading || c.Status.Phase != v1alpha1.CanaryPaused {
		t.Errorf("batch 2 moved while paused:\n%s", describe(c))
	}
	if *stable.Spec.Replicas != replicas-plan[0] || *canary.Spec.Replicas != plan[1] {
		t.Errorf("Deployments moved while paused: stable %d (want %d), canary %d (want %d)",
			*stable.Spec.Replicas, replicas-plan[0], *canary.Spec.Replicas, plan[1])
	}

	e.patchSpec(`{"paused":false}`)
	c = e.waitCanary("the end of the release", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && stable.Status.Replicas == 0 && canary.Status.AvailableReplicas == replicas
	})
	checkCompleted(t, c)
	if sizes, _ := e.watch.check(); !slices.Equal(sizes, plan) {
		t.Errorf("canary Deployment sizes %v; want %v", sizes, plan)
	}
}
