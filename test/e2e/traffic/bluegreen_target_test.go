package traffic

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
)

// Blue-green of a Deployment target through an HTTPRoute (docs/canary-targets.md, "Blue-green
// with a Deployment target through an HTTPRoute"): Deployment web (track: stable, behind
// web-stable) is released by a new image alone; the preview is the temporary Deployment, whose
// pods take web-canary's labels; the switch is one route write 0 -> 100; the hand-over scales
// web to 0, grows it on the new template, and moves the route back to 100/0 once all its pods
// are available. Beside the route watcher (weights only ever 100/0 or 0/100) runs sideWatcher:
// the route, the EndpointSlices the control plane computes for both Services and the two
// Deployments, replayed in resourceVersion order (one etcd orders them all), so that the Service
// the route sends the requests to is checked at every state of either.

var temporary = v1alpha1.TemporaryCanaryName("web")

const oldImage, newImage = "nginx:1.26", "nginx:1.27"

// sideWatcher records every state of route web, of the EndpointSlices of its two Services and
// of Deployments web and its temporary one, with their resourceVersions, and the image of every
// pod of app=web (an endpoint's version), and when Deployment web was first seen scaled down.
type sideWatcher struct {
	mu      sync.Mutex
	entries []sideEntry
	images  map[string]string
	// scaledDown is when the watcher first saw Deployment web below replicas.
	scaledDown time.Time
}

func (w *sideWatcher) scaledDownAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.scaledDown
}

type sideEntry struct {
	rv    int64
	apply func(*sideState)
}

// sideState is what the control plane held at one resourceVersion.
type sideState struct {
	routed    bool
	weight    int32
	slices    map[string]*discoveryv1.EndpointSlice
	available map[string]int32 // by Deployment, absent once deleted
}

func (w *sideWatcher) record(rv string, apply func(*sideState)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries = append(w.entries, sideEntry{rv: rvOf(rv), apply: apply})
}

// watchSides starts the sideWatcher; start it with the route and the Services in place.
func (e *env) watchSides() *sideWatcher {
	e.T.Helper()
	w := &sideWatcher{images: map[string]string{}}
	pods := e.Kube.CoreV1().Pods(e.NS)
	e.inform(listWatch(pods.List, pods.Watch, func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }), &corev1.Pod{}, func(o any, _ bool) {
		p := o.(*corev1.Pod)
		w.mu.Lock()
		w.images[p.Name] = p.Spec.Containers[0].Image
		w.mu.Unlock()
	})
	routes := e.gw.GatewayV1().HTTPRoutes(e.NS)
	e.inform(listWatch(routes.List, routes.Watch, func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=web" }), &gatewayv1.HTTPRoute{}, func(o any, deleted bool) {
		r := o.(*gatewayv1.HTTPRoute)
		obs, err := traffic.Observe(r, services)
		w.record(r.ResourceVersion, func(s *sideState) { s.routed, s.weight = !deleted && err == nil, obs.CanaryWeight })
	})
	slices := e.Kube.DiscoveryV1().EndpointSlices(e.NS)
	sel := fmt.Sprintf("%s in (%s,%s)", discoveryv1.LabelServiceName, services.Stable, services.Canary)
	e.inform(listWatch(slices.List, slices.Watch, func(o *metav1.ListOptions) { o.LabelSelector = sel }), &discoveryv1.EndpointSlice{}, func(o any, deleted bool) {
		sl := o.(*discoveryv1.EndpointSlice)
		w.record(sl.ResourceVersion, func(s *sideState) {
			if delete(s.slices, sl.Name); !deleted {
				s.slices[sl.Name] = sl
			}
		})
	})
	deps := e.Kube.AppsV1().Deployments(e.NS)
	e.inform(listWatch(deps.List, deps.Watch, func(*metav1.ListOptions) {}), &appsv1.Deployment{}, func(o any, deleted bool) {
		d := o.(*appsv1.Deployment)
		if d.Name == "web" && ptr.Deref(d.Spec.Replicas, 1) < replicas {
			w.mu.Lock()
			if w.scaledDown.IsZero() {
				w.scaledDown = time.Now()
			}
			w.mu.Unlock()
		}
		w.record(d.ResourceVersion, func(s *sideState) {
			if delete(s.available, d.Name); !deleted {
				s.available[d.Name] = d.Status.AvailableReplicas
			}
		})
	})
	return w
}

// endpoints describes the endpoints of service by the image of their pods: how many, how many
// ready; and how many versions and ready endpoints there are.
func (s *sideState) endpoints(service string, images map[string]string) (desc string, versions int, ready int32) {
	all, readyBy := map[string]int{}, map[string]int{}
	for _, sl := range s.slices {
		if sl.Labels[discoveryv1.LabelServiceName] != service {
			continue
		}
		for _, ep := range sl.Endpoints {
			v := "no pod"
			if ep.TargetRef != nil {
				v = images[ep.TargetRef.Name]
				if v == "" {
					v = "pod " + ep.TargetRef.Name + " unseen"
				}
			}
			all[v]++
			if ptr.Deref(ep.Conditions.Ready, false) {
				readyBy[v]++
				ready++
			}
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q: %d endpoints, %d ready", k, all[k], readyBy[k]))
	}
	if len(parts) == 0 {
		return "no endpoints", 0, 0
	}
	return strings.Join(parts, "; "), len(all), ready
}

// sideReport is what the replay found.
type sideReport struct {
	states     int
	violations []string
	// switchBacks describes web-stable's endpoints at each state where the route went from
	// 0/100 back to 100/0; switches web-canary's at each state where it went from 100/0 to
	// 0/100.
	switchBacks, switches []string
	// minAvailable is the fewest available pods of each Deployment seen.
	minAvailable map[string]int32
	// fewestReady is the fewest ready endpoints of the active Service in a state checked.
	fewestReady int32
	// trace describes every state, for the log of a failure.
	trace []string
}

// check replays the states in resourceVersion order. From the first state where the side the
// route sends the requests to is whole, at every state it is: the active Service's endpoints
// (every one, ready or not) are pods of one image, at least replicas of them ready (the agent
// moves the route only once the Service it moves to lists them: docs/canary-targets.md,
// "Endpoints before a whole route move"), and the active Deployment (web at 100/0, the
// temporary one at 0/100) has at least replicas available pods; the fewest ready endpoints
// seen are reported.
func (w *sideWatcher) check() sideReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	entries := slices.Clone(w.entries)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].rv < entries[j].rv })
	st := &sideState{slices: map[string]*discoveryv1.EndpointSlice{}, available: map[string]int32{}}
	rep := sideReport{minAvailable: map[string]int32{}, fewestReady: -1}
	armed := false
	for _, en := range entries {
		wasSwitched, wasBack := st.routed && st.weight == 100, st.routed && st.weight == 0
		en.apply(st)
		for n, a := range st.available {
			if m, ok := rep.minAvailable[n]; !ok || a < m {
				rep.minAvailable[n] = a
			}
		}
		if !st.routed || st.weight != 0 && st.weight != 100 { // the route watcher fails a split
			continue
		}
		service, dep := services.Stable, "web"
		if st.weight == 100 {
			service, dep = services.Canary, temporary
		}
		desc, versions, ready := st.endpoints(service, w.images)
		other, _, _ := st.endpoints(map[string]string{services.Stable: services.Canary, services.Canary: services.Stable}[service], w.images)
		rep.trace = append(rep.trace, fmt.Sprintf("resourceVersion %d: weight %d; active %s: %s; other: %s; available %v",
			en.rv, st.weight, service, desc, other, st.available))
		if wasSwitched && st.weight == 0 {
			rep.switchBacks = append(rep.switchBacks, desc)
		}
		if wasBack && st.weight == 100 {
			rep.switches = append(rep.switches, desc)
		}
		whole := versions == 1 && ready >= replicas && st.available[dep] >= replicas
		armed = armed || whole
		if !armed {
			continue
		}
		rep.states++
		if rep.fewestReady < 0 || ready < rep.fewestReady {
			rep.fewestReady = ready
		}
		if !whole {
			rep.violations = append(rep.violations, fmt.Sprintf("resourceVersion %d, route at canary weight %d: Service %s has %s; Deployment %s %d available",
				en.rv, st.weight, service, desc, dep, st.available[dep]))
		}
	}
	if !armed {
		rep.violations = append(rep.violations, "the active side was never seen whole")
	}
	return rep
}

// verify fails the test for every violation of check, logs what it saw, and returns the report.
func (w *sideWatcher) verify(t testing.TB) sideReport {
	t.Helper()
	rep := w.check()
	for _, v := range rep.violations {
		t.Errorf("active side: %s", v)
	}
	if len(rep.violations) > 0 {
		t.Logf("the states replayed:\n%s", strings.Join(rep.trace, "\n"))
	}
	t.Logf("side watcher: %d states checked; switch-backs %q; fewest available %v; fewest ready endpoints of the active Service %d",
		rep.states, rep.switchBacks, rep.minAvailable, rep.fewestReady)
	return rep
}

// setupBlueGreenTarget makes Deployment web (4 pods of nginx 1.26), its Services and route, the
// watchers (and one of the pods of app=web: never more than twice replicas, terminating ones
// included), and Canary web holding the Deployment, released blue-green as edit says.
func setupBlueGreenTarget(t *testing.T, edit func(*v1alpha1.CanaryBlueGreen, *v1alpha1.CanarySpec)) (*env, *weightWatcher, *sideWatcher) {
	t.Helper()
	e := setup(t)
	e.createService(services.Stable, "stable")
	e.createService(services.Canary, "canary")
	e.createRoute()
	ww, sw := e.watchWeights(), e.watchSides()
	pods := invariant.Surge(e.Ctx, e.Kube, e.NS, "app=web", 2*replicas) // the peak of a blue-green release
	t.Cleanup(func() {
		pods.Stop()
		for _, v := range pods.Violations() {
			t.Error(v)
		}
		t.Logf("pod count watcher: %d states, at most %s", pods.Events(), pods.Worst())
	})
	e.createTarget(func(s *v1alpha1.CanarySpec) {
		s.BlueGreen = &v1alpha1.CanaryBlueGreen{ActiveService: services.Stable, PreviewService: services.Canary}
		edit(s.BlueGreen, s)
	})
	e.waitRoute(0, false)
	return e, ww, sw
}

// waitTargetPreview waits until the new image is up at full size on the temporary Deployment
// and the Canary waits for promote, the route still all on web-stable.
func (e *env) waitTargetPreview() {
	e.T.Helper()
	e.waitPhase(v1alpha1.CanaryPaused, 1)
	e.waitAvailable(temporary, replicas)
	e.waitRoute(0, false)
	if bg := e.canary().Status.BlueGreen; bg == nil || bg.Active != "web" || bg.Preview != temporary {
		e.T.Errorf("status.blueGreen %+v, want active web, preview %s", bg, temporary)
	}
}

// waitTemporaryGone waits until the Canary is in phase with its status caught up and the
// temporary Deployment deleted.
func (e *env) waitTemporaryGone(phase v1alpha1.CanaryPhase) *v1alpha1.Canary {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("Canary %s, Deployment %s deleted", phase, temporary), func() (bool, string) {
		c := e.canary()
		n := e.deploymentReplicas(temporary)
		return c.Status.Phase == phase && c.Status.ObservedGeneration == c.Generation && n == -1,
			fmt.Sprintf("%s: %s; %s at %d replicas", c.Status.Phase, c.Status.Message, temporary, n)
	})
	e.waitRoute(0, false)
	return e.canary()
}

// checkWeb fails the test unless Deployment web runs image on every one of its pods, all
// available.
func (e *env) checkWeb(image string) {
	e.T.Helper()
	d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != image || d.Status.AvailableReplicas != replicas ||
		d.Status.UpdatedReplicas != replicas || ptr.Deref(d.Spec.Replicas, 0) != replicas {
		e.T.Errorf("Deployment web on %s with %d of %d pods available (%d updated), want %s on all %d",
			img, d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 0), d.Status.UpdatedReplicas, image, replicas)
	}
}

// wantSwitchBacks fails the test unless, each of the n times the route went back to 100/0,
// web-stable's endpoints were exactly replicas pods of image, every one ready.
func wantSwitchBacks(t *testing.T, rep sideReport, image string, n int) {
	t.Helper()
	wantMoves(t, "web-stable at the switch-backs", rep.switchBacks, image, n)
}

// wantSwitches fails the test unless, each of the n times the route went to 0/100, web-canary's
// endpoints were exactly replicas pods of image, every one ready.
func wantSwitches(t *testing.T, rep sideReport, image string, n int) {
	t.Helper()
	wantMoves(t, "web-canary at the switches", rep.switches, image, n)
}

func wantMoves(t *testing.T, what string, got []string, image string, n int) {
	t.Helper()
	want := fmt.Sprintf("%q: %d endpoints, %d ready", image, replicas, replicas)
	if len(got) != n || slices.ContainsFunc(got, func(s string) bool { return s != want }) {
		t.Errorf("%s: %q, want %d times %s", what, got, n, want)
	}
}

// wantOldPodsUp fails the test if Deployment web ever had fewer than replicas available pods.
func wantOldPodsUp(t *testing.T, rep sideReport) {
	t.Helper()
	if rep.minAvailable["web"] < replicas {
		t.Errorf("Deployment web down to %d available pods, want never below %d", rep.minAvailable["web"], replicas)
	}
}

// Promoted by hand: the preview at full size while the route stays on web-stable, one write
// to 0/100, web kept whole through the scale-down delay, then the hand-over; when the route
// reads 100/0 again, web-stable selects the new pods only, every one of them ready.
func TestBlueGreenTargetRouteSwitchAndHandOver(t *testing.T) {
	e, ww, sw := setupBlueGreenTarget(t, func(bg *v1alpha1.CanaryBlueGreen, _ *v1alpha1.CanarySpec) {
		bg.ScaleDownDelaySeconds = ptr.To[int32](5)
	})
	e.setImage(newImage)
	e.waitTargetPreview()
	if ww.switched.Load() {
		t.Fatal("the route gave the preview the requests before promote")
	}
	e.promote(1)
	e.waitRoute(100, false)
	scaleDown := e.waitScaleDownTime()
	if n := e.deploymentReplicas("web"); n != replicas {
		t.Errorf("Deployment web at %d replicas during the scale-down delay, want %d", n, replicas)
	}
	c := e.waitTemporaryGone(v1alpha1.CanaryCompleted)
	if c.Status.Abort != nil {
		t.Errorf("abort %+v", c.Status.Abort)
	}
	e.checkWeb(newImage)
	rep := sw.verify(t)
	wantSwitchBacks(t, rep, newImage, 1)
	wantSwitches(t, rep, newImage, 1)
	switch at := sw.scaledDownAt(); {
	case at.IsZero():
		t.Error("Deployment web never scaled down: no hand-over seen")
	case at.Before(scaleDown.Add(-time.Second)): // the status keeps whole seconds
		t.Errorf("Deployment web scaled down at %s, before the scale-down time %s", at, scaleDown)
	}
}

// A failing pre-promotion check (the route never leaves 100/0) and a failing post-promotion
// one (the route goes back to 100/0 at once, web-stable then selecting the old pods): the
// release rolls back, the preview goes, and web's pods never fell below replicas.
func TestBlueGreenTargetRouteAnalysisFailure(t *testing.T) {
	for _, post := range []bool{false, true} {
		t.Run(map[bool]string{false: "PrePromotion", true: "PostPromotion"}[post], func(t *testing.T) {
			e, ww, sw := setupBlueGreenTarget(t, func(bg *v1alpha1.CanaryBlueGreen, s *v1alpha1.CanarySpec) {
				s.Analysis = []v1alpha1.AnalysisCheck{failingCheck()}
				if post {
					bg.PostPromotionAnalysis = []string{"smoke"}
				} else {
					bg.PrePromotionAnalysis = []string{"smoke"}
				}
				bg.AutoPromotionSeconds = ptr.To[int32](1)
				bg.ScaleDownDelaySeconds = ptr.To[int32](600)
			})
			e.setImage(newImage)
			c := e.waitTemporaryGone(v1alpha1.CanaryRolledBack)
			if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "smoke" {
				t.Errorf("abort %+v, want AnalysisFailed of smoke", a)
			}
			if post && c.Status.Abort != nil && c.Status.Abort.Step != v1alpha1.BlueGreenSwitchStep(&c.Spec) {
				t.Errorf("abort at step %d, want the switch step", c.Status.Abort.Step)
			}
			if got := ww.switched.Load(); got != post {
				t.Errorf("the route gave the new side the requests: %v, want %v", got, post)
			}
			e.checkWeb(oldImage)
			rep := sw.verify(t)
			wantSwitchBacks(t, rep, oldImage, map[bool]int{false: 0, true: 1}[post])
			wantSwitches(t, rep, newImage, map[bool]int{false: 0, true: 1}[post])
			wantOldPodsUp(t, rep)
		})
	}
}

// Aborts before the switch (the route never leaves 100/0) and, on the next image, after it
// (back to 100/0 at once, on the old pods still up); the preview goes each time.
func TestBlueGreenTargetRouteAbortBeforeAndAfter(t *testing.T) {
	e, ww, sw := setupBlueGreenTarget(t, func(bg *v1alpha1.CanaryBlueGreen, _ *v1alpha1.CanarySpec) {
		bg.ScaleDownDelaySeconds = ptr.To[int32](600)
	})
	e.setImage(newImage)
	e.waitTargetPreview()
	e.patchCanary(`{"spec":{"rollback":true}}`)
	e.waitTemporaryGone(v1alpha1.CanaryRolledBack)
	if ww.switched.Load() {
		t.Error("the route gave the preview the requests on an abort before the switch")
	}
	e.checkWeb(oldImage)

	e.patchCanary(`{"spec":{"rollback":false,"approvedBatch":0}}`)
	e.setImage("nginx:1.28")
	e.waitTargetPreview()
	e.promote(1)
	e.waitRoute(100, false)
	e.patchCanary(`{"spec":{"rollback":true}}`)
	e.waitTemporaryGone(v1alpha1.CanaryRolledBack)
	e.checkWeb(oldImage)
	rep := sw.verify(t)
	wantSwitchBacks(t, rep, oldImage, 1)
	wantSwitches(t, rep, "nginx:1.28", 1) // the second release's; the first never switched
	wantOldPodsUp(t, rep)
}

// Promoted by itself after autoPromotionSeconds, with no promote: switched, handed over.
func TestBlueGreenTargetRouteAutoPromotion(t *testing.T) {
	e, ww, sw := setupBlueGreenTarget(t, func(bg *v1alpha1.CanaryBlueGreen, _ *v1alpha1.CanarySpec) {
		bg.AutoPromotionSeconds = ptr.To[int32](2)
		bg.ScaleDownDelaySeconds = ptr.To[int32](1)
	})
	e.setImage(newImage)
	e.Eventually("the route switched to the new side", func() (bool, string) {
		c := e.canary()
		return ww.switched.Load(), fmt.Sprintf("%s at step %d: %s", c.Status.Phase, c.Status.CurrentBatch, c.Status.Message)
	})
	c := e.waitTemporaryGone(v1alpha1.CanaryCompleted)
	if c.Spec.ApprovedBatch != 0 {
		t.Errorf("spec.approvedBatch %d: promoted by someone", c.Spec.ApprovedBatch)
	}
	e.checkWeb(newImage)
	rep := sw.verify(t)
	wantSwitchBacks(t, rep, newImage, 1)
	wantSwitches(t, rep, newImage, 1)
}
