package canary

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// blueGreenTargetCanary releases Deployment checkout (2 replicas) blue-green through Services
// checkout and checkout-preview, promoted by hand, with the default scale-down delay.
func blueGreenTargetCanary() *v1alpha1.Canary {
	cn := depTargetCanary()
	cn.Spec.Steps, cn.Spec.PauseType, cn.Spec.MaxSurge = nil, "", nil
	cn.Spec.BlueGreen = &v1alpha1.CanaryBlueGreen{ActiveService: "checkout", PreviewService: "checkout-preview"}
	return cn
}

// labelledStable is Deployment checkout with its pods labelled for blue-green in Git.
func labelledStable() *appsv1.Deployment {
	d := newStable(2)
	d.Spec.Template.Labels[v1alpha1.LabelBlueGreen] = "checkout"
	return d
}

// blueGreenTargetFixture has the Deployment and both Services (selecting app=checkout).
func blueGreenTargetFixture(t *testing.T, d *appsv1.Deployment) *fixture {
	t.Helper()
	return withBlueGreenServices(newFixture(t, blueGreenTargetCanary(), d))
}

// heldBlueGreenTarget is a fixture whose Canary holds Deployment checkout, both Services
// pinned to its pods.
func heldBlueGreenTarget(t *testing.T) *fixture {
	t.Helper()
	f := blueGreenTargetFixture(t, labelledStable())
	f.step("patch canaries checkout merge annotations", patchActive, patchPreview,
		`patch deployments checkout {"spec":{"paused":true}}`, writeStatus)
	if f.selectorOf("checkout") != "checkout" || f.selectorOf("checkout-preview") != "checkout" {
		t.Fatalf("selectors %q, %q", f.selectorOf("checkout"), f.selectorOf("checkout-preview"))
	}
	f.status(v1alpha1.CanaryCompleted, 0)
	f.settled()
	return f
}

// blueGreenTargetPreview starts the release of nginx:1.27: the temporary Deployment at full size
// behind the preview Service, the Deployment keeping its 2 pods behind the active one.
func blueGreenTargetPreview(t *testing.T) *fixture {
	t.Helper()
	f := heldBlueGreenTarget(t)
	f.setImage("nginx:1.27")
	f.step(patchPreview, createCanaryDep, writeStatus)
	f.wantPatches(selectorTo("checkout-canary"))
	tmp := f.deployment("checkout-canary")
	if replicasOf(tmp) != 2 || tmp.Spec.Template.Labels[v1alpha1.LabelBlueGreen] != "checkout-canary" || tmp.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Fatalf("temporary Deployment: %d replicas, labels %v", replicasOf(tmp), tmp.Spec.Template.Labels)
	}
	f.pods("checkout-canary", 2, 2, 2)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryPaused, 1, Ps, P, P)
	f.settled()
	return f
}

// A whole release of a Deployment target: the switch, the scale-down after its delay, then the
// hand-over: the Deployment grown to every replica at once on the new template, the Services
// moved to its pods only once they are all available (same version before and after), and the
// temporary Deployment scaled down only after that, then deleted.
func TestBlueGreenTargetReleaseAndHandOver(t *testing.T) {
	f := blueGreenTargetPreview(t)
	if bg := f.canary().Status.BlueGreen; bg == nil || bg.Active != "checkout" || bg.Preview != "checkout-canary" {
		t.Fatalf("status.blueGreen %+v", bg)
	}
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchActive, writeStatus)
	f.wantPatches(selectorTo("checkout-canary"))
	f.status(v1alpha1.CanaryProgressing, 3, C, C, Bk)
	f.clock.Step(29 * time.Second)
	f.settled()
	f.clock.Step(2 * time.Second)
	f.step(patchStable+replicas(0), writeStatus)
	f.pods("checkout", 0, 0, 0)
	// The new template is the stable one; the Deployment is resumed for its new ReplicaSet.
	f.step("patch canaries checkout merge annotations", `patch deployments checkout {"spec":{"paused":false}}`, writeStatus)
	f.pods("checkout", 0, 0, 0)
	f.step(`patch deployments checkout {"spec":{"paused":true}}`, patchStable+replicas(2), writeStatus)
	f.pods("checkout", 2, 1, 2)
	f.step(writeStatus) // 1 of 2 available: the Services stay on the temporary pods
	if f.selectorOf("checkout") != "checkout-canary" {
		t.Fatalf("active selector %q before every Deployment pod is available", f.selectorOf("checkout"))
	}
	f.pods("checkout", 2, 2, 2)
	f.step(patchActive, patchPreview, patchCanary+replicas(0), writeStatus)
	f.wantPatches(selectorTo("checkout"), selectorTo("checkout"), replicas(0))
	f.pods("checkout-canary", 0, 0, 0)
	f.step("delete deployments checkout-canary", writeStatus)
	c := f.status(v1alpha1.CanaryCompleted, 3, C, C, C)
	if bg := c.Status.BlueGreen; bg.Active != "checkout" || bg.Preview != "checkout" {
		t.Fatalf("status.blueGreen after the hand-over %+v", bg)
	}
	f.wantEvent("Normal " + v1alpha1.EventReleaseComplete)
	f.settled()
}

// An abort before the switch writes the stable template back to the Deployment (which kept its
// pods), removes the preview and deletes the temporary Deployment: the active Service never left
// the Deployment's pods.
func TestBlueGreenTargetAbortBeforeTheSwitch(t *testing.T) {
	f := blueGreenTargetPreview(t)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.step("patch deployments checkout json", writeStatus)
	if img := f.deployment("checkout").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" {
		t.Fatalf("checkout's template runs %s, want nginx:1.26 back", img)
	}
	f.pods("checkout", 2, 2, 2)
	f.step(patchCanary+replicas(0), writeStatus)
	f.pods("checkout-canary", 0, 0, 0)
	f.step("delete deployments checkout-canary", writeStatus)
	f.status(v1alpha1.CanaryRolledBack, 1, RB, P, P)
	if f.selectorOf("checkout") != "checkout" {
		t.Errorf("active selector %q", f.selectorOf("checkout"))
	}
}

// An abort after the switch, the old pods being up, switches the active Service back as soon as
// the Deployment (its template written back) has every pod available, then the new version goes.
func TestBlueGreenTargetAbortAfterTheSwitch(t *testing.T) {
	f := blueGreenTargetPreview(t)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchActive, writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.step("patch deployments checkout json", writeStatus) // the template back: no switch until observed
	if f.selectorOf("checkout") != "checkout-canary" {
		t.Fatalf("active selector %q before the Deployment's pods are back", f.selectorOf("checkout"))
	}
	f.pods("checkout", 2, 2, 2)
	f.step(patchActive, patchCanary+replicas(0), writeStatus)
	f.wantPatches(selectorTo("checkout"), replicas(0))
	f.pods("checkout-canary", 0, 0, 0)
	f.step("delete deployments checkout-canary", writeStatus)
	f.status(v1alpha1.CanaryRolledBack, 3, C, C, RB)
}

// A Deployment whose pod template lacks the blue-green label is refused before anything is
// written: the agent does not write the template of a Deployment in Git.
func TestBlueGreenTargetWithoutTheLabelIsDegraded(t *testing.T) {
	f := blueGreenTargetFixture(t, newStable(2))
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryDegraded, 0)
	if want := `the pod template of Deployment "checkout" lacks label apps.workload.dev/bluegreen: checkout`; !strings.HasPrefix(c.Status.Message, want) {
		t.Errorf("message %q, want it to start with %q", c.Status.Message, want)
	}
}

// The label added to the template in the same change as a new image is refused too: the
// running pods, on the recorded stable template, do not carry it.
func TestBlueGreenTargetLabelAddedWithTheReleaseIsDegraded(t *testing.T) {
	cn := blueGreenTargetCanary()
	cn.Annotations = map[string]string{v1alpha1.AnnotationStableSnapshot: snapshotOf(newStable(2))}
	d := labelledStable()
	d.Spec.Paused = true
	f := newFixture(t, cn, d)
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryDegraded, 0)
	if want := `the stable template recorded for Deployment "checkout" (its running pods) lacks label`; !strings.HasPrefix(c.Status.Message, want) {
		t.Errorf("message %q, want it to start with %q", c.Status.Message, want)
	}
}

// A template change after the switch restarts the release from the preview, as any template
// change of a Deployment target does: the active Service goes back to the Deployment's pods
// (still up) in the same sync, written before the temporary Deployment takes the newer template.
func TestBlueGreenTargetChangeAfterTheSwitchRestartsFromThePreview(t *testing.T) {
	f := blueGreenTargetPreview(t)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchActive, writeStatus)
	f.setImage("nginx:1.28")
	f.step(`patch canaries checkout [{"op":"test","path":"/spec/approvedBatch","value":1},{"op":"replace","path":"/spec/approvedBatch","value":0}]`,
		patchActive, "update deployments checkout-canary", writeStatus)
	if f.selectorOf("checkout") != "checkout" {
		t.Fatalf("active selector %q", f.selectorOf("checkout"))
	}
	if img := f.deployment("checkout-canary").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
		t.Fatalf("temporary Deployment runs %s", img)
	}
	f.status(v1alpha1.CanaryProgressing, 1, U, P, P)
}
