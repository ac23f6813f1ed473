package canary

import (
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

const (
	// orphanCanary removes the Canary's owner reference, the first of the canary Deployment's.
	orphanCanary = patchCanary + `[{"op":"test","path":"/metadata/ownerReferences/0/uid","value":"canary-uid"},{"op":"remove","path":"/metadata/ownerReferences/0"}]`
	// removeFinalizer removes the controller's finalizer, the first of the Canary's.
	removeFinalizer = `patch canaries checkout [{"op":"test","path":"/metadata/finalizers/0","value":"apps.workload.dev/orphan-canary-deployment"},{"op":"remove","path":"/metadata/finalizers/0"}]`
)

// deleting marks the Canary deleted, as the API server does for an object with finalizers.
func deleting(c *v1alpha1.Canary) {
	c.DeletionTimestamp = ptr.To(metav1.NewTime(start))
}

// The finalizer is the first write of a Canary's first sync, before the snapshot and the
// canary Deployment, with the resourceVersion read; a resync then writes nothing.
func TestFinalizerAddedOnFirstSync(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	f.step(addFinalizer, writeSnapshot, "create deployments checkout-canary", writeStatus)
	if got, want := f.patches[0], `{"metadata":{"finalizers":["apps.workload.dev/orphan-canary-deployment"],"resourceVersion":"1"}}`; got != want {
		t.Errorf("finalizer patch %s; want %s", got, want)
	}
	if c := f.canary(); !slices.Equal(c.Finalizers, []string{v1alpha1.FinalizerOrphanCanary}) {
		t.Errorf("finalizers %q", c.Finalizers)
	}
	f.settled()
	f.available("checkout-canary", 1)
	f.step(patchStable+replicas(9), writeStatus)
	f.settled()
}

// Finalizers of others are kept, in their order.
func TestFinalizerAddedAfterOthers(t *testing.T) {
	cn := newCanary(v1alpha1.PauseFirst)
	cn.Finalizers = []string{"example.com/keep"}
	f := newFixture(t, cn, newStable(10))
	f.step(addFinalizer, writeSnapshot, "create deployments checkout-canary", writeStatus)
	if got, want := f.patches[0], `{"metadata":{"finalizers":["example.com/keep","apps.workload.dev/orphan-canary-deployment"],"resourceVersion":"1"}}`; got != want {
		t.Errorf("finalizer patch %s; want %s", got, want)
	}
	f.settled()
}

// A Canary released by an agent without the finalizer gets it on its next sync, and the sync
// goes on with the resourceVersion of the patch.
func TestFinalizerAddedToAReleaseUnderWay(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, func(c *v1alpha1.Canary) { c.Finalizers = nil })
	f.step(addFinalizer, patchCanary+replicas(7), patchStable+replicas(6), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 3, C, C, U, P)
	f.settled()
}

// A Canary that changed since the cache showed it does not get the finalizer, and nothing else
// happens in that sync.
func TestFinalizerOnAStaleCanaryWritesNothingElse(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	f.editCanary(func(c *v1alpha1.Canary) { c.Labels = map[string]string{"team": "shop"} }) // not refreshed: the cache lags
	actions, err := f.trySync()
	if !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Fatalf("sync error %v; want a conflict", err)
	}
	if !slices.Equal(actions, []string{addFinalizer}) {
		t.Fatalf("actions %q; want only the refused finalizer patch", actions)
	}
	if f.deployment("checkout-canary") != nil {
		t.Fatal("canary Deployment created")
	}
	f.step(addFinalizer, writeSnapshot, "create deployments checkout-canary", writeStatus)
}

// A Canary created and deleted before its first sync (the cache still shows it, the API server
// no longer has it): the finalizer patch finds nothing, and no canary Deployment is created.
func TestCanaryDeletedBeforeItsFirstSync(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	if err := f.client.Tracker().Delete(canariesGVR, ns, "checkout"); err != nil {
		t.Fatal(err)
	}
	actions, err := f.trySync()
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if !slices.Equal(actions, []string{addFinalizer}) {
		t.Fatalf("actions %q; want only the finalizer patch", actions)
	}
	if f.deployment("checkout-canary") != nil {
		t.Fatal("canary Deployment created for a deleted Canary")
	}
	f.step()
}

// A completed release deleted: the canary Deployment, serving every pod, loses the Canary's
// owner reference and keeps its pods; the stable Deployment stays at 0; then the finalizer goes
// and the Canary with it. No status is written.
func TestDeletionOrphansTheCanaryDeployment(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 4, C, 10, 0, func(c *v1alpha1.Canary) {
		c.Status.Phase = v1alpha1.CanaryCompleted
		deleting(c)
	})
	before := f.deployment("checkout-canary")
	f.step(orphanCanary, removeFinalizer)

	d := f.deployment("checkout-canary")
	if d == nil || len(d.OwnerReferences) != 0 {
		t.Fatalf("canary Deployment after the deletion: %+v", d)
	}
	if *d.Spec.Replicas != 10 || d.Status.AvailableReplicas != 10 || d.Generation != before.Generation {
		t.Errorf("canary Deployment changed: %d replicas, %d available, generation %d", *d.Spec.Replicas, d.Status.AvailableReplicas, d.Generation)
	}
	if s := f.deployment("checkout"); *s.Spec.Replicas != 0 {
		t.Errorf("stable Deployment at %d; want 0, as it was", *s.Spec.Replicas)
	}
	if _, err := f.client.AppsV1alpha1().Canaries(ns).Get(t.Context(), "checkout", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Canary is still there: %v", err)
	}
	f.wantEvent(`Normal ` + EventOrphaned + ` Canary deleted: Deployment "checkout-canary" is no longer owned by it and keeps its 10 replicas (10 available); stable Deployment "checkout" keeps its 0`)
	f.step()
}

// Mid-release, with another owner reference on the canary Deployment and another finalizer on
// the Canary before ours: exactly our entries go, by index and tested by value.
func TestDeletionKeepsOtherOwnersAndFinalizers(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, C, 4, 6, func(c *v1alpha1.Canary) {
		c.Finalizers = []string{"example.com/keep", v1alpha1.FinalizerOrphanCanary}
		deleting(c)
	})
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "release-notes", UID: "other-uid"}
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) {
		d.OwnerReferences = append([]metav1.OwnerReference{other}, d.OwnerReferences...)
	})
	f.step(
		patchCanary+`[{"op":"test","path":"/metadata/ownerReferences/1/uid","value":"canary-uid"},{"op":"remove","path":"/metadata/ownerReferences/1"}]`,
		`patch canaries checkout [{"op":"test","path":"/metadata/finalizers/1","value":"apps.workload.dev/orphan-canary-deployment"},{"op":"remove","path":"/metadata/finalizers/1"}]`,
	)
	if d := f.deployment("checkout-canary"); len(d.OwnerReferences) != 1 || d.OwnerReferences[0] != other || *d.Spec.Replicas != 4 {
		t.Errorf("canary Deployment: owners %+v, %d replicas", d.OwnerReferences, *d.Spec.Replicas)
	}
	if s := f.deployment("checkout"); *s.Spec.Replicas != 6 {
		t.Errorf("stable Deployment at %d; want 6, as it was", *s.Spec.Replicas)
	}
	if c := f.canary(); !slices.Equal(c.Finalizers, []string{"example.com/keep"}) {
		t.Errorf("finalizers %q", c.Finalizers)
	}
	// Still there for the other finalizer: nothing more to do.
	f.settled()
}

// Without a canary Deployment (deleted before batch 1, or while paused before it), only the
// finalizer goes.
func TestDeletionWithoutACanaryDeployment(t *testing.T) {
	cn := newCanary(v1alpha1.PauseFirst)
	cn.Finalizers = []string{v1alpha1.FinalizerOrphanCanary}
	deleting(cn)
	f := newFixture(t, cn, newStable(10))
	f.step(removeFinalizer)
	if len(f.events()) != 0 {
		t.Error("an Event without a canary Deployment to orphan")
	}
}

// A Deployment of that name that is not the Canary's is left alone.
func TestDeletionLeavesAnotherDeploymentAlone(t *testing.T) {
	other := newStable(3)
	other.Name, other.UID = "checkout-canary", "someone-elses"
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other-uid"}}
	cn := newCanary(v1alpha1.PauseFirst)
	cn.Finalizers = []string{v1alpha1.FinalizerOrphanCanary}
	deleting(cn)
	f := newFixture(t, cn, newStable(10), other)
	f.step(removeFinalizer)
}

// A canary Deployment of an earlier spec.canary.name, still owned by the Canary, is orphaned
// too (found in the cache by the owner reference).
func TestDeletionOrphansAnEarlierCanaryDeployment(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, C, 4, 6, nil)
	f.editCanary(func(c *v1alpha1.Canary) {
		c.Spec.Canary.Name = "checkout-canary-2"
		deleting(c)
	})
	f.step(orphanCanary, removeFinalizer)
	if d := f.deployment("checkout-canary"); len(d.OwnerReferences) != 0 || *d.Spec.Replicas != 4 {
		t.Errorf("canary Deployment: owners %+v, %d replicas", d.OwnerReferences, *d.Spec.Replicas)
	}
}

// The canary Deployment is read from the API server: one created just before the deletion,
// not yet in the cache, is orphaned all the same.
func TestDeletionOrphansACanaryDeploymentNotYetCached(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 1, U, 1, 10, deleting)
	f.refresh()
	if err := f.deploymentStore.Delete(f.deployment("checkout-canary")); err != nil {
		t.Fatal(err)
	}
	actions, err := f.trySync()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{orphanCanary, removeFinalizer}; !slices.Equal(actions, want) {
		t.Fatalf("actions %q; want %q", actions, want)
	}
}

// A finalizer removal refused because the cache lags (another finalizer before ours went) is
// retried with the index the API server has; the canary Deployment, already orphaned, is not
// patched again and no second Event is sent.
func TestDeletionRetriesAStaleFinalizerIndex(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 4, C, 10, 0, func(c *v1alpha1.Canary) {
		c.Finalizers = []string{"orphan", v1alpha1.FinalizerOrphanCanary}
		deleting(c)
	})
	f.refresh()
	f.editCanary(func(c *v1alpha1.Canary) { c.Finalizers = []string{v1alpha1.FinalizerOrphanCanary} }) // the cache lags
	actions, err := f.trySync()
	if !errors.Is(err, errStale) {
		t.Fatalf("sync error %v; want errStale", err)
	}
	if want := []string{orphanCanary, `patch canaries checkout [{"op":"test","path":"/metadata/finalizers/1","value":"apps.workload.dev/orphan-canary-deployment"},{"op":"remove","path":"/metadata/finalizers/1"}]`}; !slices.Equal(actions, want) {
		t.Fatalf("actions %q; want %q", actions, want)
	}
	f.wantEvent("Normal " + EventOrphaned)
	f.step(removeFinalizer)
	if events := f.events(); len(events) != 0 {
		t.Errorf("events on the retry: %q", events)
	}
}

// Foreground deletion asks the garbage collector to delete the canary Deployment: the
// controller does not race it, and says so.
func TestForegroundDeletion(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 4, C, 10, 0, func(c *v1alpha1.Canary) {
		c.Finalizers = []string{metav1.FinalizerDeleteDependents, v1alpha1.FinalizerOrphanCanary}
		deleting(c)
	})
	f.step(`patch canaries checkout [{"op":"test","path":"/metadata/finalizers/1","value":"apps.workload.dev/orphan-canary-deployment"},{"op":"remove","path":"/metadata/finalizers/1"}]`)
	f.wantEvent("Warning " + EventForegroundDeletion)
	if d := f.deployment("checkout-canary"); !isOwnedBy(d, f.canary()) {
		t.Error("the canary Deployment lost its owner reference in a foreground deletion")
	}
}

// A deleted Canary without our finalizer (it was removed, or never added) is left to the API
// server: no write at all.
func TestDeletionWithoutOurFinalizerWritesNothing(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, C, 4, 6, func(c *v1alpha1.Canary) {
		c.Finalizers = []string{"example.com/keep"}
		deleting(c)
	})
	f.settled()
}
