package traffic

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
)

// Blue-green through an HTTPRoute (docs/canary.md, "Blue-green through an HTTPRoute"): the
// route's stable and canary Services are the active and preview Services, and the switch is
// one write of the route's weights. A watcher of the route fails the test the moment any
// version of it splits the requests: the weights are only ever 100/0 or 0/100.

// weightWatcher watches route web through an informer (relisting across expired watches) and
// records whether the canary side was ever given the requests.
type weightWatcher struct {
	switched atomic.Bool
	states   atomic.Int32
}

func (e *env) watchWeights() *weightWatcher {
	e.T.Helper()
	w := &weightWatcher{}
	routes := e.gw.GatewayV1().HTTPRoutes(e.NS)
	lw := listWatch(routes.List, routes.Watch, func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=web" })
	check := func(o any) {
		r, ok := o.(*gatewayv1.HTTPRoute)
		if !ok {
			return
		}
		w.states.Add(1)
		obs, err := traffic.Observe(r, services)
		switch {
		case err != nil:
			e.T.Errorf("route web (resourceVersion %s): %v", r.ResourceVersion, err)
		case obs.CanaryWeight == 100:
			w.switched.Store(true)
			return
		case obs.CanaryWeight == 0:
			return
		default:
			e.T.Errorf("route web (resourceVersion %s) splits the requests: canary weight %d", r.ResourceVersion, obs.CanaryWeight)
		}
		e.Cancel() // fail now: every wait of the test ends at once
	}
	e.inform(lw, &gatewayv1.HTTPRoute{}, func(o any, deleted bool) {
		if !deleted {
			check(o)
		}
	})
	e.T.Cleanup(func() {
		e.T.Logf("route watcher: %d states of route web, switched %v", w.states.Load(), w.switched.Load())
	})
	return w
}

// createBlueGreen creates the Services, the route (all to web-stable) and Canary web releasing
// nginx 1.27 blue-green through it, with edit applied, and starts the route's watcher.
func (e *env) createBlueGreen(edit func(*v1alpha1.CanaryBlueGreen, *v1alpha1.CanarySpec)) *weightWatcher {
	e.T.Helper()
	e.createService(services.Stable, "stable")
	e.createService(services.Canary, "canary")
	e.createRoute()
	w := e.watchWeights()
	bg := &v1alpha1.CanaryBlueGreen{ActiveService: services.Stable, PreviewService: services.Canary}
	cn := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.CanarySpec{
			Replicas:  replicas,
			StableRef: v1alpha1.StableRef{Name: "web"},
			Canary:    v1alpha1.CanaryTarget{Name: "web-canary", Template: podTemplate(map[string]string{"app": "web", "track": "canary"}, "nginx:1.27")},
			TrafficRouting: &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
				HTTPRoute: "web", StableService: services.Stable, CanaryService: services.Canary}},
			BlueGreen: bg,
		},
	}
	if edit != nil {
		edit(bg, &cn.Spec)
	}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, cn, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
	return w
}

// waitPreview waits until the preview is paused for promote at full size, the route still all
// on the stable side.
func (e *env) waitPreview() {
	e.T.Helper()
	e.waitPhase(v1alpha1.CanaryPaused, 1)
	e.waitAvailable("web-canary", replicas)
	e.waitRoute(0, false)
	if bg := e.canary().Status.BlueGreen; bg == nil || bg.Active != "web" || bg.Preview != "web-canary" {
		e.T.Errorf("status.blueGreen %+v, want active web, preview web-canary", bg)
	}
}

// waitAvailable waits until Deployment name has want available pods and spec.replicas want.
func (e *env) waitAvailable(name string, want int32) {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("Deployment %s at %d available pods", name, want), func() (bool, string) {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return *d.Spec.Replicas == want && d.Status.AvailableReplicas == want && d.Status.Replicas == want,
			fmt.Sprintf("spec %d, %d pods, %d available", *d.Spec.Replicas, d.Status.Replicas, d.Status.AvailableReplicas)
	})
}

// Promoted by hand: the route goes from 0 to 100 in one write, and the old side is scaled down
// only then, whole until the scale-down time the status names.
func TestBlueGreenRouteSwitch(t *testing.T) {
	e := setup(t)
	w := e.createBlueGreen(func(bg *v1alpha1.CanaryBlueGreen, _ *v1alpha1.CanarySpec) {
		bg.ScaleDownDelaySeconds = ptr.To[int32](5)
	})
	e.waitPreview()
	if w.switched.Load() {
		t.Fatal("the route gave the preview the requests before promote")
	}
	e.promote(1)
	e.waitRoute(100, false)
	scaleDown := e.waitScaleDownTime()
	if n := e.deploymentReplicas("web"); n != replicas {
		t.Errorf("Deployment web at %d replicas during the scale-down delay, want %d", n, replicas)
	}
	e.waitPhase(v1alpha1.CanaryCompleted, 0)
	e.waitAvailable("web", 0)
	if now := time.Now(); now.Before(scaleDown.Add(-time.Second)) { // the status keeps whole seconds
		t.Errorf("the old side scaled down at %s, before its scale-down time %s", now, scaleDown)
	}
	e.waitAvailable("web-canary", replicas)
}

// A failing post-promotion check switches the route back to 0 at once, the old side being
// still whole; it was at 100 meanwhile.
func TestBlueGreenRoutePostPromotionFailure(t *testing.T) {
	e := setup(t)
	w := e.createBlueGreen(func(bg *v1alpha1.CanaryBlueGreen, s *v1alpha1.CanarySpec) {
		s.Analysis = []v1alpha1.AnalysisCheck{failingCheck()}
		bg.PostPromotionAnalysis = []string{"smoke"}
		bg.AutoPromotionSeconds = ptr.To[int32](1)
		bg.ScaleDownDelaySeconds = ptr.To[int32](600)
	})
	e.waitPhase(v1alpha1.CanaryRolledBack, 0)
	e.waitRoute(0, false)
	if !w.switched.Load() {
		t.Error("the route never gave the new side the requests")
	}
	c := e.canary()
	if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Step != v1alpha1.BlueGreenSwitchStep(&c.Spec) {
		t.Errorf("abort %+v, want AnalysisFailed at the switch step", a)
	}
	if n := e.deploymentReplicas("web"); n != replicas {
		t.Errorf("Deployment web at %d replicas, want %d", n, replicas)
	}
}

// Aborts before the switch (never at 100) and, once the release restarted, after it (back to
// 0): the old side is whole each time and the preview goes.
func TestBlueGreenRouteAbortBeforeAndAfterTheSwitch(t *testing.T) {
	e := setup(t)
	w := e.createBlueGreen(func(bg *v1alpha1.CanaryBlueGreen, _ *v1alpha1.CanarySpec) {
		bg.ScaleDownDelaySeconds = ptr.To[int32](600)
	})
	e.waitPreview()
	e.patchCanary(`{"spec":{"rollback":true}}`)
	e.waitPhase(v1alpha1.CanaryRolledBack, 0)
	e.waitAvailable("web-canary", 0)
	if w.switched.Load() {
		t.Error("the route gave the preview the requests on an abort before the switch")
	}

	e.patchCanary(`{"spec":{"rollback":false,"approvedBatch":0}}`)
	e.waitPreview()
	e.promote(1)
	e.waitRoute(100, false)
	e.patchCanary(`{"spec":{"rollback":true}}`)
	e.waitPhase(v1alpha1.CanaryRolledBack, 0)
	e.waitRoute(0, false)
	e.waitAvailable("web", replicas)
	e.waitAvailable("web-canary", 0)
}

// failingCheck is check smoke: a Job whose pod fails (kwok fails pods of images ending in
// job-fail: test/localcluster/stages.yaml).
func failingCheck() v1alpha1.AnalysisCheck {
	return v1alpha1.AnalysisCheck{
		Name: "smoke",
		Provider: v1alpha1.AnalysisProvider{Job: &v1alpha1.JobProvider{Template: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "smoke", Image: "example.com/smoke:job-fail"}},
				}},
			},
		}}},
	}
}
