package canary

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// blueGreenTargetRoute is a fixture whose Canary releases Deployment checkout (2 pods of
// nginx:1.26, track: stable) blue-green through HTTPRoute checkout: the route's stable Service
// checkout-stable (track: stable) is the active Service, its canary Service checkout-canary
// (track: canary) the preview Service, the route giving the stable side everything.
func blueGreenTargetRoute(t *testing.T, edit func(*v1alpha1.CanarySpec)) *trafficFixture {
	t.Helper()
	cn := blueGreenTargetCanary()
	cn.Spec.BlueGreen.ActiveService, cn.Spec.BlueGreen.PreviewService = "checkout-stable", "checkout-canary"
	cn.Spec.TrafficRouting = &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
		HTTPRoute: "checkout", StableService: "checkout-stable", CanaryService: "checkout-canary"}}
	if edit != nil {
		edit(&cn.Spec)
	}
	return withTraffic(t, newFixture(t, cn, newStable(2)), trafficRoute(100, 0),
		service("checkout-stable", "stable"), service("checkout-canary", "canary"))
}

// heldTargetRoute holds Deployment checkout: no label asked for, no Service written, the route
// left at everything on the stable Service.
func heldTargetRoute(t *testing.T, edit func(*v1alpha1.CanarySpec)) *trafficFixture {
	t.Helper()
	f := blueGreenTargetRoute(t, edit)
	f.tstep(writeSnapshot, pausePatch, writeStatus)
	c := f.status(v1alpha1.CanaryCompleted, 0)
	if bg := c.Status.BlueGreen; bg == nil || bg.Active != "checkout" || bg.Preview != "" {
		t.Fatalf("status.blueGreen %+v: the route on the Deployment's pods, no preview", bg)
	}
	f.wantRoute(0, false)
	f.settled()
	return f
}

// targetRoutePreview starts the release of nginx:1.27: the temporary Deployment at full size
// with the canary Service's labels (not the stable one's, and no blue-green label), the
// Deployment keeping its 2 pods, the route giving the preview nothing.
func targetRoutePreview(t *testing.T, edit func(*v1alpha1.CanarySpec)) *trafficFixture {
	t.Helper()
	f := heldTargetRoute(t, edit)
	f.setImage("nginx:1.27")
	f.tstep(createCanaryDep, writeStatus)
	tmp := f.deployment("checkout-canary")
	if replicasOf(tmp) != 2 || tmp.Spec.Template.Labels["track"] != "canary" || tmp.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Fatalf("temporary Deployment: %d replicas, labels %v", replicasOf(tmp), tmp.Spec.Template.Labels)
	}
	if l, ok := tmp.Spec.Template.Labels[v1alpha1.LabelBlueGreen]; ok {
		t.Fatalf("temporary pods labelled %s=%s: the route's Services select by the user's labels", v1alpha1.LabelBlueGreen, l)
	}
	f.pods("checkout-canary", 2, 2, 2)
	f.tstep(writeStatus)
	c := f.status(v1alpha1.CanaryPaused, 1, Ps, P, P)
	if bg := c.Status.BlueGreen; bg == nil || bg.Active != "checkout" || bg.Preview != "checkout-canary" {
		t.Fatalf("status.blueGreen %+v", bg)
	}
	f.wantRoute(0, false)
	f.settled()
	return f
}

const (
	pausePatch  = `patch deployments checkout {"spec":{"paused":true}}`
	resumePatch = `patch deployments checkout {"spec":{"paused":false}}`
)

// switchRoute promotes the preview: the switch is one route patch, 0 to 100 on the canary
// Service; no Service and no Deployment is written.
func switchRoute(f *trafficFixture) {
	f.t.Helper()
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.wantRoute(100, false)
	c := f.status(v1alpha1.CanaryProgressing, 3, C, C, Bk)
	if bg := c.Status.BlueGreen; bg.Active != "checkout-canary" || bg.ScaleDownTime == nil {
		f.t.Fatalf("status.blueGreen after the switch %+v", bg)
	}
}

// targetRouteHandingOver runs a released target to its hand-over's last step: the switch, the
// old pods scaled to 0 after the delay and gone, the Deployment resumed, paused and grown to
// every replica at once, the route on the temporary pods until its pods are all available, which
// they now are.
func targetRouteHandingOver(f *trafficFixture) {
	f.t.Helper()
	switchRoute(f)
	f.clock.Step(29 * time.Second)
	f.tstep()
	f.clock.Step(2 * time.Second)
	f.tstep(patchStable+replicas(0), writeStatus)
	f.pods("checkout", 0, 0, 0)
	f.editDeployment("checkout", func(d *appsv1.Deployment) { d.Status.TerminatingReplicas = ptr.To[int32](1) })
	f.tstep(writeStatus) // an old pod still terminating: no hand-over yet
	f.pods("checkout", 0, 0, 0)
	f.tstep(writeSnapshot, resumePatch, writeStatus)
	f.wantRoute(100, false)
	f.pods("checkout", 0, 0, 0)
	f.tstep(pausePatch, patchStable+replicas(2), writeStatus)
	f.pods("checkout", 2, 1, 2)
	f.tstep(writeStatus) // 1 of 2 available: the route stays on the temporary pods
	f.wantRoute(100, false)
	f.pods("checkout", 2, 2, 2)
}

// A whole release: the switch; the Deployment's old pods scaled to 0 after the delay (the route
// gives them nothing since the switch); the hand-over only once they are all gone: the
// Deployment resumed for its new ReplicaSet, paused, grown to every replica at once; the route
// back to 100 on the stable Service only once every one of them is available (its endpoints
// are then new pods only); the temporary Deployment scaled to 0 only once the route shows it,
// then deleted.
func TestBlueGreenTargetRouteReleaseAndHandOver(t *testing.T) {
	f := targetRoutePreview(t, nil)
	targetRouteHandingOver(f)
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
	if n := replicasOf(f.deployment("checkout-canary")); n != 2 {
		t.Fatalf("temporary Deployment at %d before the route showed 0", n)
	}
	f.tstep(patchCanary+replicas(0), writeStatus)
	f.pods("checkout-canary", 0, 0, 0)
	f.tstep("delete deployments checkout-canary", writeStatus)
	c := f.status(v1alpha1.CanaryCompleted, 3, C, C, C)
	if bg := c.Status.BlueGreen; bg.Active != "checkout" || bg.Preview != "" {
		t.Fatalf("status.blueGreen after the hand-over %+v", bg)
	}
	f.wantEvent("Normal " + v1alpha1.EventReleaseComplete)
	f.wantRoute(0, false)
	f.settled()
}

// removeTargetPreview ends a switch-back whose route shows 0 once the Deployment has its pods
// back: the temporary Deployment is scaled to 0, then deleted once its pods are gone.
func removeTargetPreview(f *trafficFixture) {
	f.t.Helper()
	f.pods("checkout", 2, 2, 2)
	f.tstep(patchCanary+replicas(0), writeStatus)
	f.pods("checkout-canary", 0, 0, 0)
	f.tstep("delete deployments checkout-canary", writeStatus)
	f.wantRoute(0, false)
}

// An abort before the switch writes the stable template back to the Deployment (which kept its
// pods) and removes the preview; the route never gives it anything.
func TestBlueGreenTargetRouteAbortBeforeTheSwitch(t *testing.T) {
	f := targetRoutePreview(t, nil)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep("patch deployments checkout json", writeStatus)
	removeTargetPreview(f)
	f.status(v1alpha1.CanaryRolledBack, 1, RB, P, P)
	f.wantRoute(0, false)
	f.settled()
}

// An abort after the switch, the Deployment's old pods being up, sets the route back to 0 at
// once, written before the template written back (which changes none of the paused
// Deployment's pods); the new version goes only once the route shows 0.
func TestBlueGreenTargetRouteAbortAfterTheSwitch(t *testing.T) {
	f := targetRoutePreview(t, nil)
	switchRoute(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), "patch deployments checkout json", writeStatus)
	f.wantRoute(0, false)
	removeTargetPreview(f)
	f.status(v1alpha1.CanaryRolledBack, 3, C, C, RB)
	f.wantRoute(0, false)
	f.settled()
}

// A failed post-promotion check switches back at once, the Deployment's old pods being up.
func TestBlueGreenTargetRoutePostPromotionFailureSwitchesBack(t *testing.T) {
	f := targetRoutePreview(t, func(s *v1alpha1.CanarySpec) {
		s.BlueGreen.PostPromotionAnalysis = []string{"health"}
		withHealthCheck(s)
	})
	// The temporary pods, one restarting 3 times.
	f.ctrl.analysisEnv.Pods = podLister(t, f.deployment("checkout-canary").Spec.Template.Labels, 0, 3)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, Bk, P)
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), "patch deployments checkout json", writeStatus)
	c := f.status(v1alpha1.CanaryRollingBack, 2, C, RB, P)
	if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Step != 2 {
		t.Fatalf("abort %+v", a)
	}
	f.wantRoute(0, false)
}

// Aborted once the old pods were scaled down: the Deployment comes back up on its old template
// first while the temporary pods keep every request; the route goes back to 0 only once all of
// the Deployment's pods are available, and only then does the new version go.
func TestBlueGreenTargetRouteAbortAfterTheScaleDown(t *testing.T) {
	f := targetRoutePreview(t, func(s *v1alpha1.CanarySpec) { s.BlueGreen.ScaleDownDelaySeconds = ptr.To[int32](0) })
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.tstep(patchStable+replicas(0), writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep("patch deployments checkout json", writeStatus)
	f.wantRoute(100, false)
	f.pods("checkout", 2, 1, 2)
	f.tstep(writeStatus) // 1 of 2 old pods available: the new ones keep every request
	f.wantRoute(100, false)
	f.pods("checkout", 2, 2, 2)
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	f.tstep(patchCanary+replicas(0), writeStatus)
	f.pods("checkout-canary", 0, 0, 0)
	f.tstep("delete deployments checkout-canary", writeStatus)
	f.status(v1alpha1.CanaryRolledBack, 3, C, C, C)
	f.wantRoute(0, false)
}

// A template change after the switch restarts the release from the preview, as any template
// change of a Deployment target does: the route goes back to the Deployment's pods (still up)
// in the same sync, written before the temporary Deployment takes the newer template.
func TestBlueGreenTargetRouteChangeAfterTheSwitchRestarts(t *testing.T) {
	f := targetRoutePreview(t, nil)
	switchRoute(f)
	f.setImage("nginx:1.28")
	f.tstep(listSlices("checkout-stable"), `patch canaries checkout [{"op":"test","path":"/spec/approvedBatch","value":1},{"op":"replace","path":"/spec/approvedBatch","value":0}]`,
		routePatch(weightOps(100, 0)), "update deployments checkout-canary", writeStatus)
	f.wantRoute(0, false)
	if img := f.deployment("checkout-canary").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
		t.Fatalf("temporary Deployment runs %s", img)
	}
	f.status(v1alpha1.CanaryProgressing, 1, U, P, P)
}

// A template change while the old pods are going (the scale-down delay over) restarts the
// release from the preview too: the Deployment comes back up on its old ReplicaSet first, the
// temporary pods keeping every request and their template; once the Deployment's pods are all
// available the route goes back to them, and the temporary Deployment takes the newer template
// in the same sync (the route written first).
func TestBlueGreenTargetRouteChangeDuringTheScaleDownRestarts(t *testing.T) {
	f := targetRoutePreview(t, func(s *v1alpha1.CanarySpec) { s.BlueGreen.ScaleDownDelaySeconds = ptr.To[int32](0) })
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.tstep(patchStable+replicas(0), writeStatus)
	f.pods("checkout", 0, 0, 0)
	f.editDeployment("checkout", func(d *appsv1.Deployment) { d.Status.TerminatingReplicas = ptr.To[int32](2) })
	f.tstep(writeStatus)
	f.setImage("nginx:1.28")
	f.tstep(`patch canaries checkout [{"op":"test","path":"/spec/approvedBatch","value":1},{"op":"replace","path":"/spec/approvedBatch","value":0}]`,
		patchStable+replicas(2), writeStatus)
	f.wantRoute(100, false)
	f.pods("checkout", 2, 1, 0) // paused: its pods on the ReplicaSet of nginx:1.26
	f.tstep(writeStatus)
	f.wantRoute(100, false)
	if img := f.deployment("checkout-canary").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
		t.Fatalf("temporary Deployment runs %s while the route gives it every request", img)
	}
	f.pods("checkout", 2, 2, 0)
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), "update deployments checkout-canary", writeStatus)
	f.wantRoute(0, false)
	f.status(v1alpha1.CanaryProgressing, 1, U, P, P)
}

// A failed pre-promotion check aborts the release before the switch: the route never gives the
// preview anything, and the preview goes.
func TestBlueGreenTargetRoutePrePromotionFailureNeverSwitches(t *testing.T) {
	f := heldTargetRoute(t, func(s *v1alpha1.CanarySpec) {
		s.BlueGreen.PrePromotionAnalysis = []string{"health"}
		withHealthCheck(s)
	})
	f.setImage("nginx:1.27")
	f.tstep(createCanaryDep, writeStatus)
	f.ctrl.analysisEnv.Pods = podLister(t, f.deployment("checkout-canary").Spec.Template.Labels, 0, 3)
	f.pods("checkout-canary", 2, 2, 2)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryProgressing, 1, Bk, P, P)
	f.tstep("patch deployments checkout json", writeStatus)
	c := f.status(v1alpha1.CanaryRollingBack, 1, RB, P, P)
	if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Step != 1 {
		t.Fatalf("abort %+v", a)
	}
	f.wantRoute(0, false)
	removeTargetPreview(f)
	f.status(v1alpha1.CanaryRolledBack, 1, RB, P, P)
}

// A route split by hand between releases is set back to everything on the Deployment's pods by
// the hold; one split when a release starts is pinned in the sync that creates the preview, the
// route written first.
func TestBlueGreenTargetRouteIsPinnedBeforeThePreview(t *testing.T) {
	f := heldTargetRoute(t, nil)
	split := trafficRoute(50, 50)
	if err := f.gateway.Tracker().Update(gatewayv1.SchemeGroupVersion.WithResource("httproutes"), split, ns); err != nil {
		t.Fatal(err)
	}
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)))
	f.wantRoute(0, false)

	if err := f.gateway.Tracker().Update(gatewayv1.SchemeGroupVersion.WithResource("httproutes"), split, ns); err != nil {
		t.Fatal(err)
	}
	f.setImage("nginx:1.27")
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), createCanaryDep, writeStatus)
	f.wantRoute(0, false)
}
