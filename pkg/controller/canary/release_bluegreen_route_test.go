package canary

import (
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// blueGreenRouteFixture is checkout's blue-green release of 4 replicas switching through
// HTTPRoute "checkout", whose Services checkout-stable and checkout-canary are the active and
// preview Services, the route giving the stable side everything.
func blueGreenRouteFixture(t *testing.T, edit func(*v1alpha1.CanarySpec)) *trafficFixture {
	t.Helper()
	return blueGreenRouteFixtureWith(t, trafficRoute(100, 0), edit)
}

func blueGreenRouteFixtureWith(t *testing.T, route *gatewayv1.HTTPRoute, edit func(*v1alpha1.CanarySpec)) *trafficFixture {
	t.Helper()
	cn := blueGreenCanary(func(bg *v1alpha1.CanaryBlueGreen) {
		bg.ActiveService, bg.PreviewService = "checkout-stable", "checkout-canary"
	})
	cn.Spec.TrafficRouting = &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
		HTTPRoute: "checkout", StableService: "checkout-stable", CanaryService: "checkout-canary"}}
	if edit != nil {
		edit(&cn.Spec)
	}
	return withTraffic(t, newFixture(t, cn, newStable(4)), route,
		service("checkout-stable", "stable"), service("checkout-canary", "canary"))
}

// routePreviewUp runs a route-switched blue-green release to its preview: no label on the stable
// pods and no selector written, the canary Deployment at 4 pods at once, all available, the
// route still giving them nothing.
func routePreviewUp(f *trafficFixture) {
	f.t.Helper()
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	if got := f.deployment("checkout").Spec.Template.Labels[v1alpha1.LabelBlueGreen]; got != "" {
		f.t.Fatalf("stable pod template labelled %q: a route switch needs no label", got)
	}
	if n := replicasOf(f.deployment("checkout-canary")); n != 4 {
		f.t.Fatalf("preview of %d pods, want 4", n)
	}
	f.available("checkout-canary", 4)
	f.tstep(writeStatus)
	f.wantRoute(0, false)
}

// A whole release through the route: the preview waits for promote with the route at 0; the
// switch is one route patch to 100 (no Service is written); the stable pods stay up for the
// scale-down delay, then go.
func TestBlueGreenRouteRelease(t *testing.T) {
	f := blueGreenRouteFixture(t, nil)
	routePreviewUp(f)
	c := f.status(v1alpha1.CanaryPaused, 1, Ps, P, P)
	if bg := c.Status.BlueGreen; bg == nil || bg.Active != "checkout" || bg.Preview != "checkout-canary" {
		t.Fatalf("status.blueGreen %+v", bg)
	}
	f.tstep()

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.wantRoute(100, false)
	c = f.status(v1alpha1.CanaryProgressing, 3, C, C, Bk)
	if bg := c.Status.BlueGreen; bg.Active != "checkout-canary" || bg.ScaleDownTime == nil {
		t.Fatalf("status.blueGreen after the switch %+v", bg)
	}
	f.clock.Step(29 * time.Second)
	f.tstep()
	f.clock.Step(2 * time.Second)
	f.tstep(patchStable+replicas(0), writeStatus)
	f.available("checkout", 0)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 3, C, C, C)
	f.wantRoute(100, false)
	f.tstep()
}

// A route that split the traffic before the release is set to give the new version nothing
// before its Deployment is created, in the same sync (the route is written first).
func TestBlueGreenRouteIsPinnedBeforeThePreview(t *testing.T) {
	f := blueGreenRouteFixtureWith(t, trafficRoute(50, 50), nil)
	f.tstep(addFinalizer, listSlices("checkout-stable"), writeSnapshot, routePatch(weightOps(100, 0)), createCanaryDep, writeStatus)
	f.wantRoute(0, false)
}

// An abort before the switch removes the preview; the route never gave it weight.
func TestBlueGreenRouteAbortBeforeTheSwitch(t *testing.T) {
	f := blueGreenRouteFixture(t, nil)
	routePreviewUp(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(patchCanary+replicas(0), writeStatus)
	f.status(v1alpha1.CanaryRollingBack, 1, RB, P, P)
	f.wantRoute(0, false)
}

// An abort after the switch, the old pods being still up, sets the route back to 0 first; the
// new version goes only once the route shows it.
func TestBlueGreenRouteAbortAfterTheSwitch(t *testing.T) {
	f := blueGreenRouteFixture(t, nil)
	routePreviewUp(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
	if d := f.deployment("checkout-canary"); replicasOf(d) != 4 {
		t.Fatalf("canary Deployment at %d before the route showed 0", replicasOf(d))
	}
	f.tstep(patchCanary+replicas(0), writeStatus)
	f.status(v1alpha1.CanaryRollingBack, 3, C, C, RB)
}

// Aborted after completion: the old version comes back first; the route keeps every request on
// the new pods until all the old ones are available, then goes back to 0, and only then does
// the new version go.
func TestBlueGreenRouteAbortAfterCompletion(t *testing.T) {
	f := blueGreenRouteFixture(t, func(s *v1alpha1.CanarySpec) { s.BlueGreen.ScaleDownDelaySeconds = ptr.To[int32](0) })
	routePreviewUp(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.tstep(patchStable+replicas(0), writeStatus)
	f.available("checkout", 0)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 3, C, C, C)

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(patchStable+replicas(4), writeStatus)
	f.available("checkout", 3)
	f.tstep(writeStatus) // 3 of 4 old pods available: the new ones keep every request
	f.wantRoute(100, false)
	f.available("checkout", 4)
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
	f.tstep(patchCanary+replicas(0), writeStatus)
}

// A failed post-promotion check sets the route back to 0 at once, the old pods being up.
func TestBlueGreenRoutePostPromotionFailureSwitchesBack(t *testing.T) {
	f := blueGreenRouteFixture(t, func(s *v1alpha1.CanarySpec) {
		s.BlueGreen.PostPromotionAnalysis = []string{"health"}
		withHealthCheck(s)
	})
	f.ctrl.analysisEnv.Pods = bluePods(t, 0, 0, 0, 3)
	routePreviewUp(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, Bk, P)
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	c := f.status(v1alpha1.CanaryRollingBack, 2, C, RB, P)
	if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Step != 2 {
		t.Fatalf("abort %+v", a)
	}
	f.wantRoute(0, false)
}

// With previewReplicas the new version grows to every replica once promoted, and only then does
// the route switch.
func TestBlueGreenRoutePreviewReplicasGrowBeforeTheSwitch(t *testing.T) {
	f := blueGreenRouteFixture(t, func(s *v1alpha1.CanarySpec) { s.BlueGreen.PreviewReplicas = ptr.To[int32](1) })
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 1)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryPaused, 1, Ps, P, P, P)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(patchCanary+replicas(4), writeStatus)
	f.available("checkout-canary", 3)
	f.tstep(writeStatus) // 3 of 4 available: no switch yet
	f.wantRoute(0, false)
	f.available("checkout-canary", 4)
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 4, C, C, C, Bk)
}

// A route someone split by hand after the switch is set back to everything on the new version,
// and the old pods stay whole until the route, as read back, gives them nothing: status.blueGreen
// names no active side while the route splits.
func TestBlueGreenRouteSplitByHandKeepsTheOldPods(t *testing.T) {
	f := blueGreenRouteFixture(t, nil)
	routePreviewUp(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	split := trafficRoute(50, 50)
	split.ResourceVersion = "100"
	if err := f.gateway.Tracker().Update(gatewayv1.SchemeGroupVersion.WithResource("httproutes"), split, ns); err != nil {
		t.Fatal(err)
	}
	f.refreshRoute()
	f.clock.Step(31 * time.Second) // the scale-down delay is over
	f.refresh()
	if actions, err := f.trySync(); err != nil || !slices.Equal(actions, []string{listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus}) {
		t.Fatalf("actions %q, error %v; want the route patch and the status only: no stable pod goes while the route gives it weight", actions, err)
	}
	f.tstep(patchStable+replicas(0), writeStatus)
	f.wantRoute(100, false)
}
