package canary

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

const (
	// The Services' selector writes: the active Service is named like the stable Deployment.
	patchActive  = "patch services checkout merge"
	patchPreview = "patch services checkout-preview merge"
	labelStable  = patchStable + `{"spec":{"template":{"metadata":{"labels":{"apps.workload.dev/bluegreen":"checkout"}}}}}`
)

// selectorTo is the patch of a Service's selector to the pods of side.
func selectorTo(side string) string {
	return `{"spec":{"selector":{"apps.workload.dev/bluegreen":"` + side + `"}}}`
}

// blueGreenCanary is checkout's blue-green release of nginx 1.27 over 4 replicas, promoted by
// hand, with the default scale-down delay.
func blueGreenCanary(edit func(*v1alpha1.CanaryBlueGreen)) *v1alpha1.Canary {
	cn := newCanary("")
	cn.Spec.Batches, cn.Spec.PauseType, cn.Spec.MaxSurge = nil, "", nil
	cn.Spec.Replicas = 4
	cn.Spec.BlueGreen = &v1alpha1.CanaryBlueGreen{ActiveService: "checkout", PreviewService: "checkout-preview"}
	if edit != nil {
		edit(cn.Spec.BlueGreen)
	}
	return cn
}

// blueGreenFixture is a fixture with the stable Deployment at 4 pods and both Services
// selecting app=checkout.
func blueGreenFixture(t *testing.T, cn *v1alpha1.Canary) *fixture {
	t.Helper()
	return withBlueGreenServices(newFixture(t, cn, newStable(4)))
}

// withBlueGreenServices adds Services checkout and checkout-preview, selecting app=checkout.
func withBlueGreenServices(f *fixture) *fixture {
	f.t.Helper()
	for _, name := range []string{"checkout", "checkout-preview"} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "checkout"}},
		}
		if err := f.kube.Tracker().Add(svc); err != nil {
			f.t.Fatal(err)
		}
	}
	return f
}

// selectorOf is the blue-green key of a Service's selector in the fake API server.
func (f *fixture) selectorOf(name string) string {
	f.t.Helper()
	svc, err := f.kube.CoreV1().Services(ns).Get(f.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return svc.Spec.Selector[v1alpha1.LabelBlueGreen]
}

// wantPatches checks the bodies of the last sync's patches.
func (f *fixture) wantPatches(want ...string) {
	f.t.Helper()
	if !slices.Equal(f.patches, want) {
		f.t.Errorf("patches\n  got  %q\n  want %q", f.patches, want)
	}
}

// previewUp runs a blue-green release to its preview: the stable pod template labelled (its
// pods rolled), the Services pinned, the canary Deployment at 4 pods, all available.
func previewUp(f *fixture) {
	f.t.Helper()
	f.step(addFinalizer, writeSnapshot, labelStable, writeStatus)
	if got := f.deployment("checkout").Spec.Template.Labels[v1alpha1.LabelBlueGreen]; got != "checkout" {
		f.t.Fatalf("stable pod template label %q", got)
	}
	// The stable Deployment rolls its pods: nothing else moves meanwhile.
	f.editDeployment("checkout", func(d *appsv1.Deployment) { d.Generation = 2 })
	f.settled()
	f.available("checkout", 4)
	f.step(patchActive, patchPreview, createCanaryDep, writeStatus)
	f.wantPatches(selectorTo("checkout"), selectorTo("checkout-canary"))
	if d := f.deployment("checkout-canary"); replicasOf(d) != 4 || d.Spec.Template.Labels[v1alpha1.LabelBlueGreen] != "checkout-canary" {
		f.t.Fatalf("canary Deployment: %d replicas, labels %v", replicasOf(d), d.Spec.Template.Labels)
	}
	f.available("checkout-canary", 4)
}

// A whole blue-green release: preview at full size behind the preview Service while the active
// one selects the stable pods, a pause until promoted, the switch, the scale-down delay, then the
// stable Deployment scaled to 0; the available pods of the active side never fewer than 4.
func TestBlueGreenRelease(t *testing.T) {
	f := blueGreenFixture(t, blueGreenCanary(nil))
	previewUp(f)
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryPaused, 1, Ps, P, P)
	if bg := c.Status.BlueGreen; bg == nil || bg.Active != "checkout" || bg.Preview != "checkout-canary" || bg.ScaleDownTime != nil {
		t.Fatalf("status.blueGreen %+v", bg)
	}
	f.settled()

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchActive, writeStatus)
	f.wantPatches(selectorTo("checkout-canary"))
	c = f.status(v1alpha1.CanaryProgressing, 3, C, C, Bk)
	if bg := c.Status.BlueGreen; bg.Active != "checkout-canary" || bg.ScaleDownTime == nil || !bg.ScaleDownTime.Time.Equal(start.Add(30*time.Second)) {
		t.Fatalf("status.blueGreen after the switch %+v", bg)
	}
	f.wantEvent("Normal ServiceSwitched")
	// The old pods stay up for the delay.
	f.clock.Step(29 * time.Second)
	f.settled()
	f.clock.Step(2 * time.Second)
	f.step(patchStable+replicas(0), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 3, C, C, C)
	f.available("checkout", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 3, C, C, C)
	if f.selectorOf("checkout") != "checkout-canary" || f.selectorOf("checkout-preview") != "checkout-canary" {
		t.Errorf("selectors %q, %q", f.selectorOf("checkout"), f.selectorOf("checkout-preview"))
	}
	f.settled()
}

// With previewReplicas the preview runs that many pods; once promoted the new version grows to
// every replica, and only then does the active Service switch.
func TestBlueGreenPreviewReplicasGrowBeforeTheSwitch(t *testing.T) {
	f := blueGreenFixture(t, blueGreenCanary(func(bg *v1alpha1.CanaryBlueGreen) { bg.PreviewReplicas = ptr.To[int32](1) }))
	f.step(addFinalizer, writeSnapshot, labelStable, writeStatus)
	f.available("checkout", 4)
	f.step(patchActive, patchPreview, createCanaryDep, writeStatus)
	if n := replicasOf(f.deployment("checkout-canary")); n != 1 {
		t.Fatalf("preview of %d pods, want 1", n)
	}
	f.available("checkout-canary", 1)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryPaused, 1, Ps, P, P, P)

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchCanary+replicas(4), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U, P, P)
	f.available("checkout-canary", 3)
	f.step(writeStatus) // 3 of 4 available: no switch yet
	f.available("checkout-canary", 4)
	f.step(patchActive, writeStatus)
	f.status(v1alpha1.CanaryProgressing, 4, C, C, C, Bk)
}

// autoPromotionSeconds promotes by itself once the preview was available that long.
func TestBlueGreenAutoPromotion(t *testing.T) {
	f := blueGreenFixture(t, blueGreenCanary(func(bg *v1alpha1.CanaryBlueGreen) { bg.AutoPromotionSeconds = ptr.To[int32](60) }))
	previewUp(f)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryProgressing, 1, Bk, P, P)
	f.clock.Step(59 * time.Second)
	f.settled()
	f.clock.Step(2 * time.Second)
	f.step(patchActive, writeStatus)
	f.status(v1alpha1.CanaryProgressing, 3, C, C, Bk)
}

// An abort before the switch removes the preview at once: the active Service never left the
// stable pods.
func TestBlueGreenAbortBeforeTheSwitch(t *testing.T) {
	f := blueGreenFixture(t, blueGreenCanary(nil))
	previewUp(f)
	f.step(writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.step(patchCanary+replicas(0), writeStatus)
	f.status(v1alpha1.CanaryRollingBack, 1, RB, P, P)
	f.available("checkout-canary", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryRolledBack, 1, RB, P, P)
	if f.selectorOf("checkout") != "checkout" {
		t.Errorf("active selector %q", f.selectorOf("checkout"))
	}
}

// An abort after the switch, while the old pods are up, switches back before the new version
// goes, in one sync.
func TestBlueGreenAbortAfterTheSwitch(t *testing.T) {
	f := blueGreenFixture(t, blueGreenCanary(nil))
	previewUp(f)
	f.step(writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchActive, writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.step(patchActive, patchCanary+replicas(0), writeStatus)
	f.wantPatches(selectorTo("checkout"), replicas(0))
	f.status(v1alpha1.CanaryRollingBack, 3, C, C, RB)
}

// An abort after completion brings the old version back up first; the active Service stays
// on the new pods until every old pod is available, then switches back, and the new version
// goes.
func TestBlueGreenAbortAfterCompletion(t *testing.T) {
	f := blueGreenFixture(t, blueGreenCanary(func(bg *v1alpha1.CanaryBlueGreen) { bg.ScaleDownDelaySeconds = ptr.To[int32](0) }))
	previewUp(f)
	f.step(writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchActive, patchStable+replicas(0), writeStatus)
	f.available("checkout", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 3, C, C, C)

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.step(patchStable+replicas(4), writeStatus)
	f.available("checkout", 3)
	f.step(writeStatus) // 3 of 4 old pods available: the new ones keep the traffic
	f.available("checkout", 4)
	f.step(patchActive, patchCanary+replicas(0), writeStatus)
	f.wantPatches(selectorTo("checkout"), replicas(0))
}

// bluePods serves the new version's pods with the given restarts each, as the agent's pod
// informer would.
func bluePods(t *testing.T, restarts ...int32) corelisters.PodLister {
	t.Helper()
	return podLister(t, map[string]string{"app": "checkout", "track": "canary", v1alpha1.LabelBlueGreen: "checkout-canary",
		v1alpha1.LabelManagedBy: v1alpha1.ManagedByAgent}, restarts...)
}

// A failed pre-promotion check aborts the release before the switch: the active Service never
// selects a new pod, and the preview goes.
func TestBlueGreenPrePromotionFailureNeverSwitches(t *testing.T) {
	cn := blueGreenCanary(func(bg *v1alpha1.CanaryBlueGreen) { bg.PrePromotionAnalysis = []string{"health"} })
	withHealthCheck(&cn.Spec)
	f := blueGreenFixture(t, cn)
	f.ctrl.analysisEnv.Pods = bluePods(t, 0, 0, 0, 3)
	previewUp(f)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryProgressing, 1, Bk, P, P)
	f.step(patchCanary+replicas(0), writeStatus)
	c := f.status(v1alpha1.CanaryRollingBack, 1, RB, P, P)
	if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Step != 1 {
		t.Fatalf("abort %+v", a)
	}
	if f.selectorOf("checkout") != "checkout" {
		t.Errorf("active selector %q", f.selectorOf("checkout"))
	}
}

// switchedWithPostCheck is a blue-green Canary with a post-promotion check of pod health,
// promoted and switched: its preview's fourth pod has restarted restarts times.
func switchedWithPostCheck(t *testing.T, restarts int32) *fixture {
	cn := blueGreenCanary(func(bg *v1alpha1.CanaryBlueGreen) { bg.PostPromotionAnalysis = []string{"health"} })
	withHealthCheck(&cn.Spec)
	f := blueGreenFixture(t, cn)
	f.ctrl.analysisEnv.Pods = bluePods(t, 0, 0, 0, restarts)
	previewUp(f)
	f.step(writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchActive, writeStatus)
	return f
}

// A failed post-promotion check switches back at once, the old pods being still up, and the
// new version goes in the same sync.
func TestBlueGreenPostPromotionFailureSwitchesBack(t *testing.T) {
	f := switchedWithPostCheck(t, 3)
	f.status(v1alpha1.CanaryProgressing, 2, C, Bk, P)
	f.step(patchActive, patchCanary+replicas(0), writeStatus)
	f.wantPatches(selectorTo("checkout"), replicas(0))
	c := f.status(v1alpha1.CanaryRollingBack, 2, C, RB, P)
	if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Step != 2 {
		t.Fatalf("abort %+v", a)
	}
}

// A Service that does not exist stops the release before anything is written.
func TestBlueGreenWithoutItsServiceIsDegraded(t *testing.T) {
	f := newFixture(t, blueGreenCanary(nil), newStable(4))
	f.step(addFinalizer, writeStatus)
	c := f.status(v1alpha1.CanaryDegraded, 0)
	if c.Status.Message != `Service "checkout" of spec.blueGreen not found in namespace "shop": nothing is changed until it exists` {
		t.Errorf("message %q", c.Status.Message)
	}
}
