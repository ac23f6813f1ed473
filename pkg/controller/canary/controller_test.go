package canary

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
)

const (
	P  = v1alpha1.BatchPending
	U  = v1alpha1.BatchUpgrading
	Ps = v1alpha1.BatchPaused
	C  = v1alpha1.BatchCompleted

	patchStable = "patch deployments checkout "
	patchCanary = "patch deployments checkout-canary "
	writeStatus = "update canaries/status checkout"
	// addFinalizer and writeSnapshot are the first two writes of a release: the Canary's
	// finalizer, then the snapshot of the stable Deployment.
	addFinalizer  = "patch canaries checkout merge finalizers"
	writeSnapshot = "patch canaries checkout merge annotations"
)

func replicas(n int) string { return `{"spec":{"replicas":` + itoa(n) + `}}` }

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A whole release with pauseType First, step by step, with the exact writes of every transition.
func TestReleasePauseFirst(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))

	// Start: the finalizer goes on the Canary and the stable Deployment is recorded on it, then
	// the canary Deployment is created with batch 1's single pod. The stable Deployment is not
	// touched.
	f.step(addFinalizer, writeSnapshot, "create deployments checkout-canary", writeStatus)
	c := f.status(v1alpha1.CanaryProgressing, 1, U, P, P, P)
	wantSizes := []int32{1, 4, 7, 10}
	for i, b := range c.Status.Batches {
		if b.Index != int32(i+1) || b.CanaryReplicas != wantSizes[i] {
			t.Errorf("batch %d: index %d, %d canary pods; want %d, %d", i, b.Index, b.CanaryReplicas, i+1, wantSizes[i])
		}
	}
	if b := c.Status.Batches[0]; b.StartTime == nil || !b.StartTime.Time.Equal(start) || b.FinishTime != nil {
		t.Errorf("batch 1 times: %v, %v; want start %v and no finish", b.StartTime, b.FinishTime, start)
	}
	var snap stableSnapshot
	if err := json.Unmarshal([]byte(c.Annotations[v1alpha1.AnnotationStableSnapshot]), &snap); err != nil {
		t.Fatalf("snapshot annotation: %v", err)
	}
	if snap.Deployment != "checkout" || snap.Replicas != 10 || snap.Template.Spec.Containers[0].Image != "nginx:1.26" {
		t.Errorf("snapshot: %+v", snap)
	}
	d := f.deployment("checkout-canary")
	if *d.Spec.Replicas != 1 || d.Spec.MinReadySeconds != 5 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("canary Deployment: replicas %d, minReadySeconds %d, image %s", *d.Spec.Replicas, d.Spec.MinReadySeconds, d.Spec.Template.Spec.Containers[0].Image)
	}
	if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != "canary-uid" || ref.Kind != "Canary" || ref.APIVersion != "apps.workload.dev/v1alpha1" || !*ref.BlockOwnerDeletion {
		t.Errorf("canary Deployment controller: %+v", ref)
	}
	if d.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByAgent || d.Labels[v1alpha1.LabelCanaryName] != "checkout" {
		t.Errorf("canary Deployment labels: %v", d.Labels)
	}
	if sel := d.Spec.Selector.MatchLabels; len(sel) != 2 || sel["app"] != "checkout" || sel["track"] != "canary" {
		t.Errorf("canary Deployment selector: %v", d.Spec.Selector)
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable.IntValue() != 0 {
		t.Errorf("canary Deployment strategy: %+v; want maxUnavailable 0", d.Spec.Strategy)
	}
	f.wantEvent("Normal " + v1alpha1.EventBatchStarted)
	f.settled()

	// Batch 1's pod is available: the stable Deployment gives one pod up, and the release
	// pauses after batch 1.
	f.available("checkout-canary", 1)
	f.step(patchStable+replicas(9), writeStatus)
	c = f.status(v1alpha1.CanaryPaused, 1, Ps, P, P, P)
	if b := c.Status.Batches[0]; b.FinishTime == nil {
		t.Error("batch 1 has no finish time")
	}
	if !strings.Contains(c.Status.Message, "waiting for promotion") {
		t.Errorf("message %q", c.Status.Message)
	}
	f.wantEvent("Normal " + v1alpha1.EventBatchPaused)
	f.settled()
	f.available("checkout", 9)
	f.step(writeStatus) // the counts changed
	if c := f.canary(); c.Status.StableAvailable != 9 || c.Status.StableReplicas != 9 || c.Status.CanaryAvailable != 1 || c.Status.CanaryReplicas != 1 {
		t.Errorf("counts: %+v", c.Status)
	}
	f.settled()

	// Promote: batch 2 scales the canary to 4; the stable Deployment waits for them.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchCanary+replicas(4), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U, P, P)
	f.wantEvent("Normal " + v1alpha1.EventPromoted)
	f.settled()
	// The same promote again changes nothing.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(writeStatus) // observedGeneration only
	f.status(v1alpha1.CanaryProgressing, 2, C, U, P, P)

	// Two of the four are available: stable follows one for one.
	f.available("checkout-canary", 2)
	f.step(patchStable+replicas(8), writeStatus)
	f.settled()
	// All four: batch 2 completes and, pauseType being First, batch 3 begins at once.
	f.available("checkout-canary", 4)
	f.step(patchCanary+replicas(7), patchStable+replicas(6), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 3, C, C, U, P)
	f.settled()
	f.available("checkout-canary", 7)
	f.step(patchCanary+replicas(10), patchStable+replicas(3), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 4, C, C, C, U)
	f.available("checkout-canary", 9)
	f.step(patchStable+replicas(1), writeStatus)
	// The last batch completes: the stable Deployment goes to 0.
	f.available("checkout-canary", 10)
	f.step(patchStable+replicas(0), writeStatus)
	// Every batch is complete, but the release is not until no stable pod is left.
	c = f.status(v1alpha1.CanaryProgressing, 4, C, C, C, C)
	if !strings.Contains(c.Status.Message, "stable pods to go") {
		t.Errorf("message %q", c.Status.Message)
	}
	f.available("checkout", 0)
	f.step(writeStatus)
	c = f.status(v1alpha1.CanaryCompleted, 4, C, C, C, C)
	f.wantEvent("Normal " + v1alpha1.EventReleaseComplete)
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonCompleted {
		t.Errorf("Progressing condition: %+v", cond)
	}
	f.settled()
}

func TestPauseAllPausesAfterEveryBatchButTheLast(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseAll, 2, U, 4, 9, nil)
	f.step(patchStable+replicas(6), writeStatus)
	f.status(v1alpha1.CanaryPaused, 2, C, Ps, P, P)
	f.settled()

	// A promote of batch 2 moves to batch 3, which pauses again.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 2 })
	f.step(patchCanary+replicas(7), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 3, C, C, U, P)
	f.available("checkout-canary", 7)
	f.step(patchStable+replicas(3), writeStatus)
	f.status(v1alpha1.CanaryPaused, 3, C, C, Ps, P)

	// The last batch never pauses.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 3 })
	f.step(patchCanary+replicas(10), writeStatus)
	f.available("checkout-canary", 10)
	f.step(patchStable+replicas(0), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 4, C, C, C, C) // until the stable pods are gone
	f.available("checkout", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 4, C, C, C, C)
}

func TestPauseNoneNeverWaits(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseNone), newStable(10))
	f.step(addFinalizer, writeSnapshot, "create deployments checkout-canary", writeStatus)
	f.available("checkout-canary", 1)
	f.step(patchCanary+replicas(4), patchStable+replicas(9), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U, P, P)
}

// Promotion is a value, not a counter: a promote repeated (or sent twice at once) approves the
// same batch and advances the release exactly one batch.
func TestPromoteIsIdempotent(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseAll, 2, Ps, 4, 6, nil)
	f.step(writeStatus) // conditions, counts and message of the hand-made status
	f.settled()
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 2 })
	f.step(patchCanary+replicas(7), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 3, C, C, U, P)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 2 }) // the second promote
	f.step(writeStatus)                                                 // observedGeneration only
	f.available("checkout-canary", 7)
	f.step(patchStable+replicas(3), writeStatus)
	f.status(v1alpha1.CanaryPaused, 3, C, C, Ps, P) // batch 3 still needs its own approval
}

// A full promote approves every batch: no more pauses.
func TestFullPromote(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseAll, 1, Ps, 1, 9, nil)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 4 })
	f.step(patchCanary+replicas(4), writeStatus)
	f.available("checkout-canary", 4)
	f.step(patchCanary+replicas(7), patchStable+replicas(6), writeStatus)
	f.available("checkout-canary", 7)
	f.step(patchCanary+replicas(10), patchStable+replicas(3), writeStatus)
	f.available("checkout-canary", 10)
	f.step(patchStable+replicas(0), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 4, C, C, C, C) // until the stable pods are gone
	f.available("checkout", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 4, C, C, C, C)
}

// spec.paused holds the release mid-batch: no batch advances, the stable Deployment does not
// shrink (it may only grow back if canary pods stop being available), and resuming carries on.
func TestPausedMidBatch(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, func(c *v1alpha1.Canary) { c.Spec.Paused = true })
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryPaused, 2, C, U, P, P)
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); cond == nil || cond.Reason != v1alpha1.ReasonPausedBySpec {
		t.Errorf("Progressing condition: %+v", cond)
	}
	f.settled()

	// Canary pods stop being available: the stable Deployment grows back to keep capacity.
	f.available("checkout-canary", 0)
	f.step(patchStable+replicas(10), writeStatus)
	f.available("checkout-canary", 4)
	f.step(writeStatus) // counts only: still paused, stable stays at 10
	f.settled()

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Paused = false })
	f.step(patchCanary+replicas(7), patchStable+replicas(6), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 3, C, C, U, P)
}

// A completed release stays Completed when paused: there is nothing left to hold.
func TestPausedAfterCompletion(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 4, C, 10, 0, func(c *v1alpha1.Canary) { c.Spec.Paused = true })
	f.step(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 4, C, C, C, C)
	f.settled()
}

func TestPausedBeforeTheFirstBatchTouchesNothing(t *testing.T) {
	cn := newCanary(v1alpha1.PauseFirst)
	cn.Spec.Paused = true
	f := newFixture(t, cn, newStable(10))
	f.step(addFinalizer, writeStatus)
	f.status(v1alpha1.CanaryPaused, 0, P, P, P, P)
	if f.deployment("checkout-canary") != nil {
		t.Error("canary Deployment created while paused")
	}
	f.settled()
}

// A canary pod that stops being available gives its capacity back to the stable Deployment.
func TestStableGrowsBackWhenCanaryPodsFail(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 3, U, 7, 6, nil)
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 })
	f.step(patchStable+replicas(8), writeStatus)
}

// Until the Deployment controller has observed the canary Deployment's latest spec, its
// availability says nothing about it: the stable Deployment does not shrink.
func TestStaleCanaryStatusDoesNotShrinkStable(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, nil)
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) { d.Generation = 3; d.Status.ObservedGeneration = 2 })
	f.step(writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U, P, P)
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 3 })
	f.step(patchCanary+replicas(7), patchStable+replicas(6), writeStatus)
}

func TestRollbackFromBatch3(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 3, U, 7, 3, func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	// Stable first; the canary keeps its pods.
	f.step(patchStable+replicas(10), writeStatus)
	f.status(v1alpha1.CanaryRollingBack, 3, C, C, RB, P)
	f.wantEvent("Normal " + v1alpha1.EventRollingBack)
	f.settled()
	// The stable pods exist but only some are available: the canary still waits.
	f.editDeployment("checkout", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 10, UpdatedReplicas: 10, AvailableReplicas: 8}
	})
	f.step(writeStatus)
	f.settled()
	// All ten stable pods available: now the canary goes.
	f.available("checkout", 10)
	f.step(patchCanary+replicas(0), writeStatus)
	f.status(v1alpha1.CanaryRollingBack, 3, C, C, RB, P)
	f.settled()
	f.available("checkout-canary", 0)
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryRolledBack, 3, C, C, RB, P)
	f.wantEvent("Normal " + v1alpha1.EventRolledBack)
	if c.Status.StableAvailable != 10 || c.Status.CanaryReplicas != 0 {
		t.Errorf("counts: %+v", c.Status)
	}
	if d := f.deployment("checkout"); d.Spec.Template.Spec.Containers[0].Image != "nginx:1.26" {
		t.Errorf("stable template changed: %s", d.Spec.Template.Spec.Containers[0].Image)
	}
	f.settled()
}

// After completion someone moved the stable Deployment to the new image; rollback restores the
// template the stable Deployment had when the release began, at full size, before the canary
// goes.
func TestRollbackAfterCompletionRestoresStableTemplate(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 4, C, 10, 0, func(c *v1alpha1.Canary) {
		c.Status.Phase = v1alpha1.CanaryCompleted
	})
	f.step(writeStatus)
	f.settled()
	f.editDeployment("checkout", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		d.Spec.Template.Labels["extra"] = "label"
	})
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.step("patch deployments checkout json", writeStatus)
	d := f.deployment("checkout")
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" || *d.Spec.Replicas != 10 {
		t.Errorf("stable after restore: image %s, %d replicas", img, *d.Spec.Replicas)
	}
	if _, ok := d.Spec.Template.Labels["extra"]; ok {
		t.Errorf("the restored template kept a label added since: %v", d.Spec.Template.Labels)
	}
	f.wantEvent("Normal " + v1alpha1.EventRollingBack)
	f.status(v1alpha1.CanaryRollingBack, 4, C, C, C, C)
	f.settled()
	f.canaryGoes(4, C, C, C, C)
}

// Clearing spec.rollback after a rollback starts the release again from batch 1.
func TestReleaseRestartsAfterRollback(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 3, U, 0, 10, func(c *v1alpha1.Canary) {
		c.Spec.Rollback = true
		c.Status.Phase = v1alpha1.CanaryRolledBack
	})
	f.step(writeStatus)
	f.settled()
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = false })
	f.step(patchCanary+replicas(1), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 1, U, P, P, P)
	f.wantEvent("Normal " + v1alpha1.EventRestarted)
}

func TestDegradedWhenStableIsMissing(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst))
	f.step(addFinalizer, writeStatus)
	c := f.status(v1alpha1.CanaryDegraded, 0)
	if !strings.Contains(c.Status.Message, `stable Deployment "checkout" not found`) {
		t.Errorf("message %q", c.Status.Message)
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonStableNotFound {
		t.Errorf("Degraded condition: %+v", cond)
	}
	f.wantEvent("Warning " + v1alpha1.ReasonStableNotFound)
	f.settled()
	if len(f.events()) != 0 {
		t.Error("a settled Degraded Canary keeps emitting events")
	}
}

// The stable Deployment disappears mid-release: nothing is touched, the canary keeps its pods.
func TestDegradedMidReleaseTouchesNothing(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, nil)
	if err := f.kube.Tracker().Delete(deploymentsGVR, ns, "checkout"); err != nil {
		t.Fatal(err)
	}
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryDegraded, 2, C, U, P, P)
	if c.Status.CanaryReplicas != 4 {
		t.Errorf("canary replicas in status: %d", c.Status.CanaryReplicas)
	}
	f.settled()
	// Back again: the release carries on.
	if err := f.kube.Tracker().Add(newStable(9)); err != nil {
		t.Fatal(err)
	}
	f.step(patchCanary+replicas(7), patchStable+replicas(6), writeStatus)
}

func TestDegradedWhenTheCanaryNameIsTaken(t *testing.T) {
	other := newStable(3)
	other.Name, other.UID = "checkout-canary", "someone-elses"
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10), other)
	f.step(addFinalizer, writeStatus)
	c := f.status(v1alpha1.CanaryDegraded, 0)
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded); cond == nil || cond.Reason != v1alpha1.ReasonCanaryNameConflict ||
		!strings.Contains(cond.Message, `Deployment "checkout-canary" already exists and is not owned by this Canary`) {
		t.Errorf("Degraded condition: %+v", cond)
	}
	if _, ok := c.Annotations[v1alpha1.AnnotationStableSnapshot]; ok {
		t.Error("snapshot written while degraded")
	}
	f.settled()
}

func TestDegradedWhenTemplateLabelsLeaveTheSelector(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, nil)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Canary.Template.Labels = map[string]string{"app": "checkout-v2"} })
	f.step(writeStatus)
	f.status(v1alpha1.CanaryDegraded, 2, C, U, P, P)
}

// A new canary template or minReadySeconds is written to the canary Deployment; the batch does
// not complete until the Deployment has rolled to it.
func TestCanaryTemplateChange(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, nil)
	f.editCanary(func(c *v1alpha1.Canary) {
		c.Spec.Canary.Template.Spec.Containers[0].Image = "nginx:1.27.1"
		c.Spec.MinReadySeconds = 30
	})
	// The stable Deployment waits: with a new minReadySeconds, the canary pods available now
	// may not be once the Deployment controller applies it.
	f.step("update deployments checkout-canary", writeStatus)
	d := f.deployment("checkout-canary")
	if d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27.1" || d.Spec.MinReadySeconds != 30 || *d.Spec.Replicas != 4 {
		t.Errorf("canary Deployment: %s, minReadySeconds %d, %d replicas", d.Spec.Template.Spec.Containers[0].Image, d.Spec.MinReadySeconds, *d.Spec.Replicas)
	}
	// The API server bumps the generation; until the Deployment controller observes it, the
	// four available pods say nothing about the new template: the batch is not complete.
	f.editDeployment("checkout-canary", func(d *appsv1.Deployment) { d.Generation++ })
	f.settled()
	f.status(v1alpha1.CanaryProgressing, 2, C, U, P, P)
	f.available("checkout-canary", 4)
	f.step(patchCanary+replicas(7), patchStable+replicas(6), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 3, C, C, U, P)
}

// A sync that works from a stale Canary (the cache does not show the status this controller
// last wrote) works from that last write instead, and writes nothing. Here the stale status
// still says batch 3, while the canary Deployment already runs batch 4's 10 pods: acting on it
// would scale the canary back down to 7.
func TestStaleCanaryWritesNothing(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 3, U, 7, 3, nil)
	f.refresh()
	stale := f.canary()
	f.step(patchCanary+replicas(10), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 4, C, C, C, U)

	f.refresh()
	if err := f.canaryStore.Update(stale); err != nil {
		t.Fatal(err)
	}
	if actions := f.sync(); len(actions) != 0 {
		t.Fatalf("actions %q; want none", actions)
	}
	if d := f.deployment("checkout-canary"); *d.Spec.Replicas != 10 {
		t.Fatalf("canary Deployment scaled to %d", *d.Spec.Replicas)
	}
	f.status(v1alpha1.CanaryProgressing, 4, C, C, C, U)
	f.settled()
}

// A sync whose Deployment cache does not show this controller's last Deployment writes works
// from those writes: it neither repeats them nor counts the capacity they moved twice.
func TestStaleDeploymentsWriteNothing(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, nil)
	f.refresh()
	stableBefore, canaryBefore := f.deployment("checkout"), f.deployment("checkout-canary")
	f.step(patchCanary+replicas(7), patchStable+replicas(6), writeStatus)

	f.refresh()
	for _, d := range []*appsv1.Deployment{stableBefore, canaryBefore} {
		if err := f.deploymentStore.Update(d); err != nil {
			t.Fatal(err)
		}
	}
	if actions := f.sync(); len(actions) != 0 {
		t.Fatalf("actions %q; want none", actions)
	}
	f.status(v1alpha1.CanaryProgressing, 3, C, C, U, P)
	f.settled()
}

// A canary Deployment the API server refuses to create shows as Degraded=True FailedCreate with
// the server's message and phase Degraded on every try, never AsExpected, until the create
// succeeds.
func TestRefusedCreateIsDegraded(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	refuse := f.refuse("create", "checkout-canary", "exceeded quota: deployments")
	for i, want := range [][]string{
		{addFinalizer, writeSnapshot, "create deployments checkout-canary", writeStatus},
		{"create deployments checkout-canary"}, // the same refusal: the status shows it already
	} {
		f.refresh()
		actions, err := f.trySync()
		if !apierrors.IsForbidden(errors.Unwrap(err)) || !slices.Equal(actions, want) {
			t.Fatalf("try %d: actions %q, error %v; want %q and the refusal", i, actions, err, want)
		}
		c := f.canary()
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
		if c.Status.Phase != v1alpha1.CanaryDegraded || cond == nil || cond.Status != metav1.ConditionTrue ||
			cond.Reason != v1alpha1.ReasonFailedCreate || !strings.Contains(cond.Message, "exceeded quota: deployments") {
			t.Fatalf("try %d: phase %s, Degraded condition %+v", i, c.Status.Phase, cond)
		}
		f.wantEvent("Warning " + v1alpha1.ReasonFailedCreate)
	}
	*refuse = false
	f.step("create deployments checkout-canary", writeStatus)
	c := f.status(v1alpha1.CanaryProgressing, 1, U, P, P, P)
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded); cond.Status != metav1.ConditionFalse {
		t.Errorf("Degraded condition %+v after the create", cond)
	}
}

// A scale the API server refuses shows as Degraded=True FailedUpdate.
func TestRefusedScaleIsDegraded(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, nil)
	f.refuse("patch", "checkout", "denied by policy")
	f.refresh()
	actions, err := f.trySync()
	if err == nil || !slices.Equal(actions, []string{patchCanary + replicas(7), patchStable + replicas(6), writeStatus}) {
		t.Fatalf("actions %q, error %v", actions, err)
	}
	c := f.canary()
	cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
	if c.Status.Phase != v1alpha1.CanaryDegraded || cond == nil || cond.Reason != v1alpha1.ReasonFailedUpdate ||
		!strings.Contains(cond.Message, `scaling stable Deployment "checkout" to 6`) || !strings.Contains(cond.Message, "denied by policy") {
		t.Fatalf("phase %s, Degraded condition %+v", c.Status.Phase, cond)
	}
}

// A write refused during a rollback makes the phase Degraded; Progressing keeps RollingBack, so
// that clearing spec.rollback still restarts the release from batch 1.
func TestRefusedWriteDuringRollbackKeepsItsPlace(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 3, U, 7, 3, func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	refuse := f.refuse("patch", "checkout", "denied by policy")
	f.refresh()
	if actions, err := f.trySync(); err == nil || !slices.Equal(actions, []string{patchStable + replicas(10), writeStatus}) {
		t.Fatalf("actions %q, error %v", actions, err)
	}
	c := f.canary()
	progressing := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
	if c.Status.Phase != v1alpha1.CanaryDegraded || progressing == nil || progressing.Reason != v1alpha1.ReasonRollingBack {
		t.Fatalf("phase %s, Progressing %+v", c.Status.Phase, progressing)
	}
	f.events()
	*refuse = false
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = false })
	f.step(patchStable+replicas(9), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 1, U, P, P, P)
	f.wantEvent("Normal " + v1alpha1.EventRestarted)
}

func TestBatchSizesPlan(t *testing.T) {
	cn := newCanary(v1alpha1.PauseNone)
	cn.Spec.Batches = nil
	cn.Spec.BatchSizes = []intstr.IntOrString{intstr.FromString("20%"), intstr.FromInt32(5), intstr.FromString("100%")}
	f := newFixture(t, cn, newStable(10))
	f.step(addFinalizer, writeSnapshot, "create deployments checkout-canary", writeStatus)
	if d := f.deployment("checkout-canary"); *d.Spec.Replicas != 2 {
		t.Errorf("batch 1: %d canary pods, want 2", *d.Spec.Replicas)
	}
	f.available("checkout-canary", 2)
	f.step(patchCanary+replicas(5), patchStable+replicas(8), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U, P)
}

func TestErrorsRequeue(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	f.kube.PrependReactor("create", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is on fire")
	})
	f.refresh()
	if _, err := f.trySync(); err == nil || !strings.Contains(err.Error(), "etcd is on fire") {
		t.Fatalf("sync error %v; want the create error", err)
	}

	f = midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, nil)
	f.client.PrependReactor("update", "canaries", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(canariesGVR.GroupResource(), "checkout", errors.New("stale"))
	})
	f.refresh()
	if _, err := f.trySync(); !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Fatalf("sync error %v; want the conflict", err)
	}
}

func TestDeletedCanaryIsForgotten(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	if err := f.client.Tracker().Delete(canariesGVR, ns, "checkout"); err != nil {
		t.Fatal(err)
	}
	f.step()
}

// Deployment events reach the Canary: the canary Deployment through its controller reference,
// the stable one through the index of stableRef names.
func TestDeploymentEventsEnqueueTheirCanary(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseFirst, 2, U, 4, 9, nil)
	key := cache.ObjectName{Namespace: ns, Name: "checkout"}
	drain := func() []cache.ObjectName {
		var keys []cache.ObjectName
		for f.ctrl.Queue.Len() > 0 {
			k, _ := f.ctrl.Queue.Get()
			keys = append(keys, k)
			f.ctrl.Queue.Done(k)
		}
		return keys
	}
	for _, name := range []string{"checkout", "checkout-canary"} {
		d := f.deployment(name)
		f.ctrl.handleDeployment(d)
		if keys := drain(); len(keys) != 1 || keys[0] != key {
			t.Errorf("event on %s enqueued %v", name, keys)
		}
		f.ctrl.handleDeployment(cache.DeletedFinalStateUnknown{Key: ns + "/" + name, Obj: d})
		if keys := drain(); len(keys) != 1 || keys[0] != key {
			t.Errorf("deletion of %s enqueued %v", name, keys)
		}
	}
	unrelated := newStable(1)
	unrelated.Name = "payments"
	f.ctrl.handleDeployment(unrelated)
	if keys := drain(); len(keys) != 0 {
		t.Errorf("unrelated Deployment enqueued %v", keys)
	}
}

// Run wires informers, queue and workers: a Canary released through real (fake-backed)
// informers gets its canary Deployment, and Run returns when its context ends.
func TestRun(t *testing.T) {
	kube := k8sfake.NewClientset(newStable(10))
	client := fake.NewSimpleClientset(newCanary(v1alpha1.PauseFirst))
	kubeInformers := kubeinformers.NewSharedInformerFactory(kube, 0)
	canaryInformers := externalversions.NewSharedInformerFactory(client, 0)
	c, err := NewController(Config{KubeClient: kube, Client: client, Canaries: canaryInformers.Apps().V1alpha1().Canaries(),
		Deployments: kubeInformers.Apps().V1().Deployments(), Recorder: record.NewFakeRecorder(100)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kubeInformers.Start(ctx.Done())
	canaryInformers.Start(ctx.Done())
	done := make(chan struct{})
	go func() { c.Run(ctx, 2); close(done) }()

	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		cn, err := client.AppsV1alpha1().Canaries(ns).Get(ctx, "checkout", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, err = kube.AppsV1().Deployments(ns).Get(ctx, "checkout-canary", metav1.GetOptions{})
		return err == nil && cn.Status.CurrentBatch == 1, nil
	})
	if err != nil {
		t.Fatalf("the release did not begin: %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	kubeInformers.Shutdown()
	canaryInformers.Shutdown()
}

// The capacity invariant, checked over a whole simulated release: after every sync, available
// stable pods plus available canary pods never drop below spec.replicas, with pods becoming
// available one at a time.
func TestCapacityNeverDropsInASimulatedRelease(t *testing.T) {
	for _, pause := range []v1alpha1.PauseType{v1alpha1.PauseFirst, v1alpha1.PauseAll, v1alpha1.PauseNone} {
		t.Run(string(pause), func(t *testing.T) {
			f := newFixture(t, newCanary(pause), newStable(10))
			approved := int32(0)
			for i := 0; i < 200; i++ {
				f.refresh()
				f.sync()
				f.refresh()
				c := f.canary()
				if c.Status.Phase == v1alpha1.CanaryCompleted {
					if i == 0 {
						t.Fatal("completed at once")
					}
					checkEnd(t, f, 0, 10)
					return
				}
				if c.Status.Phase == v1alpha1.CanaryPaused {
					approved++
					f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = approved })
					continue
				}
				// kube-controller-manager: one more canary pod available; stable pods above
				// spec go at once, pods below spec come at once.
				if d := f.deployment("checkout-canary"); d != nil && d.Status.AvailableReplicas < *d.Spec.Replicas {
					f.available("checkout-canary", d.Status.AvailableReplicas+1)
				}
				s := f.deployment("checkout")
				f.available("checkout", min(*s.Spec.Replicas, s.Status.AvailableReplicas+1))
				if s := f.deployment("checkout"); s.Status.AvailableReplicas > *s.Spec.Replicas {
					f.available("checkout", *s.Spec.Replicas)
				}
				stable, canary := f.deployment("checkout").Status.AvailableReplicas, int32(0)
				if d := f.deployment("checkout-canary"); d != nil {
					canary = d.Status.AvailableReplicas
				}
				if stable+canary < 10 {
					t.Fatalf("step %d: %d stable + %d canary pods available, fewer than 10", i, stable, canary)
				}
			}
			t.Fatal("the release did not complete")
		})
	}
}

func checkEnd(t *testing.T, f *fixture, stable, canary int32) {
	t.Helper()
	if s := f.deployment("checkout"); *s.Spec.Replicas != stable {
		t.Errorf("stable at %d, want %d", *s.Spec.Replicas, stable)
	}
	if d := f.deployment("checkout-canary"); *d.Spec.Replicas != canary {
		t.Errorf("canary at %d, want %d", *d.Spec.Replicas, canary)
	}
}
