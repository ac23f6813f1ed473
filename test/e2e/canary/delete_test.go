package canary

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	canaryctrl "github.com/kubectl-workload/kubectl-workload/pkg/controller/canary"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// Deleting a completed Canary (the canary Deployment serving all 10 pods, the stable one at 0)
// leaves both Deployments as they are: the canary Deployment loses the Canary's owner reference,
// so the garbage collector does not delete it, and keeps its pods available throughout (the
// capacity watcher sees no drop).
func TestDeleteAfterCompletionKeepsTheCanaryDeployment(t *testing.T) {
	e := setup(t)
	e.createCanary(v1alpha1.PauseNone, 1)
	c := e.waitCanary("the end of the release", func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && stable.Status.Replicas == 0 && canary.Status.AvailableReplicas == replicas
	})
	if !slices.Contains(c.Finalizers, v1alpha1.FinalizerOrphanCanary) {
		t.Fatalf("finalizers %q; want %s", c.Finalizers, v1alpha1.FinalizerOrphanCanary)
	}
	stable, canary := e.mustDeployments()
	if !ownedBy(canary, c.UID) {
		t.Fatalf("the canary Deployment is not owned by the Canary before the deletion: %+v", canary.OwnerReferences)
	}

	e.deleteCanary()
	e.waitCanaryGone(c.UID)
	e.checkKept(c.UID, stable, canary, replicas)
	e.WaitEvent(canaryctrl.EventOrphaned)

	if sizes, stableSizes := e.watch.check(); !slices.Equal(sizes, plan) || stableSizes[len(stableSizes)-1] != 0 {
		t.Errorf("canary sizes %v, stable sizes %v; want %v and 0 at the end", sizes, stableSizes, plan)
	}
}

// A Canary deleted at batch 2 (4 canary pods, 6 stable) while the agent is not running stays,
// with its deletionTimestamp, held by the finalizer, and the garbage collector leaves the canary
// Deployment alone; once an agent runs again, it orphans the canary Deployment and lets the
// Canary go. Both Deployments keep their pods.
func TestDeleteWhileTheAgentIsDown(t *testing.T) {
	e := setup(t)
	e.createCanary(v1alpha1.PauseAll, 1)
	c := e.waitCanary("the pause after batch 1", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool { return waitingBatch(c) == 1 })
	e.promote(c)
	c = e.waitCanary("the pause after batch 2", func(c *v1alpha1.Canary, stable, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 2 && stable.Status.Replicas == replicas-plan[1]
	})
	stable, canary := e.mustDeployments()
	if *canary.Spec.Replicas != plan[1] || canary.Status.AvailableReplicas != plan[1] || *stable.Spec.Replicas != replicas-plan[1] {
		t.Fatalf("at batch 2: canary %d (%d available), stable %d", *canary.Spec.Replicas, canary.Status.AvailableReplicas, *stable.Spec.Replicas)
	}

	if err := e.agent.Stop(); err != nil {
		t.Fatal(err)
	}
	e.deleteCanary()
	time.Sleep(3 * time.Second) // time for the garbage collector to act, were it to
	held := e.canary()
	if held.DeletionTimestamp == nil || !slices.Contains(held.Finalizers, v1alpha1.FinalizerOrphanCanary) {
		t.Fatalf("the deleted Canary is not held by the finalizer: deletionTimestamp %v, finalizers %q", held.DeletionTimestamp, held.Finalizers)
	}
	if _, d := e.mustDeployments(); !ownedBy(d, c.UID) || *d.Spec.Replicas != plan[1] {
		t.Fatalf("the canary Deployment changed while the agent was down: owners %+v, %d replicas", d.OwnerReferences, *d.Spec.Replicas)
	}

	e.startAgent()
	e.waitCanaryGone(c.UID)
	e.checkKept(c.UID, stable, canary, plan[1])
	e.WaitEvent(canaryctrl.EventOrphaned)
	if sizes, _ := e.watch.check(); !slices.Equal(sizes, plan[:2]) {
		t.Errorf("canary sizes %v; want %v", sizes, plan[:2])
	}
}

// mustDeployments returns the stable and the canary Deployment, failing the test unless both
// exist.
func (e *env) mustDeployments() (stable, canary *appsv1.Deployment) {
	e.T.Helper()
	stable, canary, err := e.deployments()
	if err != nil {
		e.T.Fatal(err)
	}
	if stable == nil || canary == nil {
		e.T.Fatalf("stable %v, canary %v: want both Deployments", stable != nil, canary != nil)
	}
	return stable, canary
}

// deleteCanary deletes the Canary as kubectl delete does (background propagation).
func (e *env) deleteCanary() {
	e.T.Helper()
	if err := e.Apps.AppsV1alpha1().Canaries(e.NS).Delete(e.Ctx, name, metav1.DeleteOptions{}); err != nil {
		e.T.Fatalf("deleting the Canary: %v", err)
	}
}

// waitCanaryGone waits until the Canary with the given UID no longer exists.
func (e *env) waitCanaryGone(uid types.UID) {
	e.T.Helper()
	e2eenv.WaitFor(e.T, e.Ctx, "the Canary to be gone", func(ctx context.Context) (bool, string, error) {
		c, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, err.Error(), nil
		}
		return c.UID != uid, fmt.Sprintf("deletionTimestamp %v, finalizers %q\n%s", c.DeletionTimestamp, c.Finalizers, describe(c)), nil
	})
}

// checkKept checks, after the Canary is gone and once the garbage collector had time to act,
// that the canary Deployment has no owner reference to the Canary and still runs canaryPods
// available pods, and that neither Deployment's spec changed.
func (e *env) checkKept(uid types.UID, stableBefore, canaryBefore *appsv1.Deployment, canaryPods int32) {
	e.T.Helper()
	for _, wait := range []time.Duration{0, 3 * time.Second} {
		time.Sleep(wait)
		stable, canary := e.mustDeployments()
		if ownedBy(canary, uid) {
			e.T.Errorf("the canary Deployment still has the Canary's owner reference: %+v", canary.OwnerReferences)
		}
		if *canary.Spec.Replicas != canaryPods || canary.Status.AvailableReplicas != canaryPods || canary.Generation != canaryBefore.Generation {
			e.T.Errorf("canary Deployment: %d replicas, %d available, generation %d (was %d); want %d pods, spec unchanged",
				*canary.Spec.Replicas, canary.Status.AvailableReplicas, canary.Generation, canaryBefore.Generation, canaryPods)
		}
		if *stable.Spec.Replicas != *stableBefore.Spec.Replicas || stable.Generation != stableBefore.Generation ||
			stable.Status.AvailableReplicas != stableBefore.Status.AvailableReplicas {
			e.T.Errorf("stable Deployment: %d replicas, %d available, generation %d; want %d, %d, %d as before",
				*stable.Spec.Replicas, stable.Status.AvailableReplicas, stable.Generation,
				*stableBefore.Spec.Replicas, stableBefore.Status.AvailableReplicas, stableBefore.Generation)
		}
	}
}

// ownedBy reports whether d has an owner reference to the object with the given UID.
func ownedBy(d *appsv1.Deployment, uid types.UID) bool {
	return slices.ContainsFunc(d.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
}
