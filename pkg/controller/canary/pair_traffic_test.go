package canary

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
)

// trafficFixture is a fixture whose Canary routes through HTTPRoute "checkout" to the Services
// checkout-stable and checkout-canary.
type trafficFixture struct {
	*fixture
	gateway    *gatewayfake.Clientset
	routeStore cache.Indexer
	// refusePatch, when set, makes the fake API server refuse a route patch with its error.
	refusePatch func(k8stesting.PatchActionImpl) error
	// endpointLag is, by Service, how many of its available pods its EndpointSlices do not
	// list yet (endpoints_test.go).
	endpointLag map[string]int32
}

var testServices = traffic.Services{Stable: "checkout-stable", Canary: "checkout-canary"}

func trafficRoute(stable, canary int32) *gatewayv1.HTTPRoute {
	ref := func(name string, w int32) gatewayv1.HTTPBackendRef {
		return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: ptr.To(gatewayv1.PortNumber(80))},
			Weight:                 ptr.To(w),
		}}
	}
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: ns, ResourceVersion: "100", Generation: 1},
		Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{
			BackendRefs: []gatewayv1.HTTPBackendRef{ref("checkout-stable", stable), ref("checkout-canary", canary)},
		}}},
	}
}

func service(name, track string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "checkout", "track": track}},
	}
}

// trafficCanary is a release of 10 replicas in two steps: 2 canary pods with the given weight
// and header matches, paused, then everything.
func trafficCanary(weight *int32, matches []v1alpha1.CanaryHeaderMatch, edit func(*v1alpha1.CanarySpec)) *v1alpha1.Canary {
	return stepsCanary(func(s *v1alpha1.CanarySpec) {
		s.TrafficRouting = &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
			HTTPRoute: "checkout", StableService: "checkout-stable", CanaryService: "checkout-canary"}}
		if edit != nil {
			edit(s)
		}
	},
		v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Weight: weight, Matches: matches, Pause: &v1alpha1.CanaryPause{}},
		v1alpha1.CanaryStep{Replicas: intstr.FromString("100%")})
}

func newTrafficFixture(t *testing.T, cn *v1alpha1.Canary, route *gatewayv1.HTTPRoute, services ...*corev1.Service) *trafficFixture {
	return withTraffic(t, newFixture(t, cn, newStable(10)), route, services...)
}

// withTraffic adds the route and the Services to a fixture, and the traffic clients to its
// controller.
func withTraffic(t *testing.T, base *fixture, route *gatewayv1.HTTPRoute, services ...*corev1.Service) *trafficFixture {
	f := &trafficFixture{fixture: base}
	f.serveEndpointSlices() // endpoints_test.go
	for _, s := range services {
		if err := f.kube.Tracker().Add(s); err != nil {
			t.Fatal(err)
		}
	}
	var objs []runtime.Object
	if route != nil {
		objs = append(objs, route)
	}
	f.gateway = gatewayfake.NewClientset(objs...)
	f.gateway.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
			f.actions = append(f.actions, describe(a))
		}
		if p, ok := a.(k8stesting.PatchActionImpl); ok && f.refusePatch != nil {
			if err := f.refusePatch(p); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	routes := gatewayinformers.NewSharedInformerFactory(f.gateway, 0).Gateway().V1().HTTPRoutes()
	if err := f.ctrl.enableTraffic(f.gateway.GatewayV1(), routes); err != nil {
		t.Fatal(err)
	}
	f.routeStore = routes.Informer().GetIndexer()
	f.refreshRoute()
	return f
}

func (f *trafficFixture) refreshRoute() {
	f.t.Helper()
	var items []interface{}
	if r, err := f.gateway.GatewayV1().HTTPRoutes(ns).Get(context.Background(), "checkout", metav1.GetOptions{}); err == nil {
		items = append(items, r)
	}
	if err := f.routeStore.Replace(items, ""); err != nil {
		f.t.Fatal(err)
	}
}

// tstep is step with the route's lister refreshed too.
func (f *trafficFixture) tstep(want ...string) {
	f.t.Helper()
	f.refreshRoute()
	f.step(want...)
}

// route returns what the route carries now.
func (f *trafficFixture) route() traffic.Observed {
	f.t.Helper()
	r, err := f.gateway.GatewayV1().HTTPRoutes(ns).Get(context.Background(), "checkout", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	obs, err := traffic.Observe(r, testServices)
	if err != nil {
		f.t.Fatal(err)
	}
	return obs
}

func (f *trafficFixture) condition() *metav1.Condition {
	return meta.FindStatusCondition(f.canary().Status.Conditions, v1alpha1.ConditionTrafficRoutingReady)
}

const patchRoute = "patch httproutes checkout "

func routePatch(ops string) string {
	return patchRoute + `[{"op":"test","path":"/metadata/resourceVersion","value":"100"},` + ops + `]`
}

func weightOps(stable, canary int) string {
	return `{"op":"add","path":"/spec/rules/0/backendRefs/0/weight","value":` + itoa(stable) +
		`},{"op":"add","path":"/spec/rules/0/backendRefs/1/weight","value":` + itoa(canary) + `}`
}

var testerHeader = []v1alpha1.CanaryHeaderMatch{{Name: "x-canary", Value: "yes"}}

func (f *trafficFixture) wantRoute(weight int32, headerRoute bool) {
	f.t.Helper()
	got := f.route()
	if got.CanaryWeight != weight || (got.HeaderRule >= 0) != headerRoute {
		f.t.Fatalf("route: canary weight %d, header rule %v; want %d, %v", got.CanaryWeight, got.HeaderRule >= 0, weight, headerRoute)
	}
	st := f.canary().Status.TrafficRouting
	if st == nil || st.ActualWeight != weight || st.HeaderRoute != headerRoute {
		f.t.Fatalf("status.trafficRouting %+v, want actual weight %d, header route %v", st, weight, headerRoute)
	}
}

// A step's weight and header route go on the route once the step's pods are available, and
// the stable Deployment shrinks only after the route shows its lower weight; the last step
// follows the canary's share of available pods up to 100%, without the header route, and the
// stable pods go only once the route sends them nothing.
func TestTrafficFollowsTheSteps(t *testing.T) {
	f := newTrafficFixture(t, trafficCanary(ptr.To[int32](20), testerHeader, nil),
		trafficRoute(100, 0), service("checkout-stable", "stable"), service("checkout-canary", "canary"))
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.tstep(patchRoute+"json", writeStatus) // weight 20 and the header rule; the stable waits
	f.wantRoute(20, true)
	f.wantEvent("Normal TrafficShifted")
	f.tstep(patchStable+replicas(8), writeStatus)
	f.available("checkout", 8)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryPaused, 1, Ps, P)

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(patchCanary+replicas(10), writeStatus) // step 2 comes up with step 1's header route
	f.wantRoute(20, true)
	f.available("checkout-canary", 6)
	f.tstep(routePatch(weightOps(40, 60)), writeStatus) // step 2's weight: the available share
	f.wantRoute(60, true)
	f.tstep(patchStable+replicas(4), writeStatus)
	f.available("checkout", 4)
	f.available("checkout-canary", 10)
	f.tstep(patchRoute+"json", writeStatus) // step 2 complete: all to the canary, no header rule
	f.wantRoute(100, false)
	f.tstep(patchStable+replicas(0), writeStatus)
	f.available("checkout", 0)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 2, C, C)
	f.wantRoute(100, false)
}

// Abort takes the canary's weight and header route away before anything is scaled: the route
// patch is the rollback's first write; the canary shrinks only once the route shows it.
func TestTrafficAbortRoutesAwayFirst(t *testing.T) {
	f := newTrafficFixture(t, trafficCanary(ptr.To[int32](20), testerHeader, nil),
		trafficRoute(100, 0), service("checkout-stable", "stable"), service("checkout-canary", "canary"))
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.tstep(patchRoute+"json", writeStatus)
	f.tstep(patchStable+replicas(8), writeStatus)
	f.available("checkout", 8)
	f.tstep(writeStatus)

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(patchRoute+"json", patchStable+replicas(10), writeStatus)
	f.wantRoute(0, false)
	f.available("checkout", 10)
	// The cache lags the route patch: the canary keeps its pods, and the route patch planned
	// from the old route is refused by its resourceVersion test.
	stale := trafficRoute(80, 20)
	stale.ResourceVersion = "99"
	f.ctrl.traffic.routes = staleRoutes{f.ctrl.traffic.routes, stale}
	f.refresh()
	if actions, err := f.trySync(); !errors.Is(err, errStale) || len(actions) != 1 || !strings.HasPrefix(actions[0], patchRoute) {
		t.Fatalf("actions %q, error %v: want only a refused route patch", actions, err)
	}
	f.ctrl.traffic.routes = f.ctrl.traffic.routes.(staleRoutes).HTTPRouteLister
	f.tstep(patchCanary+replicas(0), writeStatus)
}

// staleRoutes is a route lister that still shows an older route.
type staleRoutes struct {
	gatewaylisters.HTTPRouteLister
	route *gatewayv1.HTTPRoute
}

func (s staleRoutes) HTTPRoutes(string) gatewaylisters.HTTPRouteNamespaceLister { return s }
func (s staleRoutes) Get(string) (*gatewayv1.HTTPRoute, error)                  { return s.route, nil }
func (s staleRoutes) List(labels.Selector) ([]*gatewayv1.HTTPRoute, error) {
	return []*gatewayv1.HTTPRoute{s.route}, nil
}

// Aborted after completion, with no stable pod left: the route keeps the canary's 100% until
// a stable pod is available (routing to none would be an outage), then sends it nothing, and
// only then does the canary shrink.
func TestTrafficAbortAfterCompletion(t *testing.T) {
	f := newTrafficFixture(t, trafficCanary(nil, nil, nil),
		trafficRoute(100, 0), service("checkout-stable", "stable"), service("checkout-canary", "canary"))
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.tstep(routePatch(weightOps(80, 20)), writeStatus)
	f.tstep(patchStable+replicas(8), writeStatus)
	f.available("checkout", 8)
	f.tstep(writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(patchCanary+replicas(10), writeStatus)
	f.available("checkout-canary", 10)
	f.tstep(routePatch(weightOps(0, 100)), writeStatus)
	f.tstep(patchStable+replicas(0), writeStatus)
	f.available("checkout", 0)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 2, C, C)

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(patchStable+replicas(10), writeStatus)
	f.wantRoute(100, false)
	f.available("checkout", 1)
	f.tstep(routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
}

// While the canary has weight, no canary pod is removed, even when the route is all someone
// else changed: a rollback whose route patch is refused scales nothing.
func TestTrafficNoCanaryPodGoesWhileItHasWeight(t *testing.T) {
	f := newTrafficFixture(t, trafficCanary(ptr.To[int32](20), nil, nil),
		trafficRoute(100, 0), service("checkout-stable", "stable"), service("checkout-canary", "canary"))
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.tstep(routePatch(weightOps(80, 20)), writeStatus)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.refusePatch = func(k8stesting.PatchActionImpl) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "gateway.networking.k8s.io", Resource: "httproutes"}, "checkout", errors.New("no"))
	}
	f.refreshRoute()
	f.refresh()
	actions, err := f.trySync()
	if err == nil || !slices.Equal(actions, []string{routePatch(weightOps(100, 0)), writeStatus}) {
		t.Fatalf("actions %q, error %v; want the refused route patch and the status only", actions, err)
	}
	if c := f.canary(); c.Status.Phase != v1alpha1.CanaryDegraded || !strings.Contains(c.Status.Message, "patching HTTPRoute") {
		t.Errorf("phase %s, message %q: want Degraded with the refused patch", c.Status.Phase, c.Status.Message)
	}
	if d := f.deployment("checkout-canary"); replicasOf(d) != 2 {
		t.Errorf("canary Deployment at %d, want 2", replicasOf(d))
	}
}

// A missing route or Service, or a Service that selects the wrong pods, is a
// TrafficRoutingReady=False condition and nothing is created or scaled.
func TestTrafficProblemsChangeNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		route    *gatewayv1.HTTPRoute
		services []*corev1.Service
		reason   string
	}{
		{"no route", nil, []*corev1.Service{service("checkout-stable", "stable"), service("checkout-canary", "canary")}, v1alpha1.ReasonHTTPRouteNotFound},
		{"no canary Service", trafficRoute(100, 0), []*corev1.Service{service("checkout-stable", "stable")}, v1alpha1.ReasonServiceNotFound},
		{"stable Service selects canary pods", trafficRoute(100, 0), []*corev1.Service{
			{ObjectMeta: metav1.ObjectMeta{Name: "checkout-stable", Namespace: ns}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "checkout"}}},
			service("checkout-canary", "canary")}, v1alpha1.ReasonServiceSelector},
		{"canary Service selects stable pods", trafficRoute(100, 0), []*corev1.Service{
			service("checkout-stable", "stable"), service("checkout-canary", "stable")}, v1alpha1.ReasonServiceSelector},
		{"stable Service managed by Argo Rollouts", trafficRoute(100, 0), []*corev1.Service{func() *corev1.Service {
			s := service("checkout-stable", "stable")
			s.Annotations = map[string]string{argoManagedByRollouts: "checkout"}
			return s
		}(), service("checkout-canary", "canary")}, v1alpha1.ReasonServiceManagedElsewhere},
		{"route without the canary Service", func() *gatewayv1.HTTPRoute {
			r := trafficRoute(100, 0)
			r.Spec.Rules[0].BackendRefs = r.Spec.Rules[0].BackendRefs[:1]
			return r
		}(), []*corev1.Service{service("checkout-stable", "stable"), service("checkout-canary", "canary")}, v1alpha1.ReasonHTTPRouteInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTrafficFixture(t, trafficCanary(nil, nil, nil), tc.route, tc.services...)
			f.tstep(addFinalizer, writeSnapshot, writeStatus)
			f.tstep()
			if c := f.condition(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason {
				t.Fatalf("TrafficRoutingReady %+v, want False, %s", c, tc.reason)
			}
			if f.deployment("checkout-canary") != nil || replicasOf(f.deployment("checkout")) != 10 {
				t.Error("a Deployment was changed")
			}
			if r := computePlan(mustObserve(t, f), metav1.NewTime(f.clock.Now())); r.requeueAfter != serviceTTL {
				t.Errorf("requeueAfter %s, want %s: Services are not watched", r.requeueAfter, serviceTTL)
			}
		})
	}
}

// A route someone else changed between the agent's read and its patch is not overwritten: the
// patch's resourceVersion test refuses it, the agent says so in an Event, writes nothing else
// and decides again from the route it reads next.
func TestTrafficRouteEditedConcurrently(t *testing.T) {
	f := newTrafficFixture(t, trafficCanary(ptr.To[int32](20), nil, nil),
		trafficRoute(100, 0), service("checkout-stable", "stable"), service("checkout-canary", "canary"))
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.refreshRoute()
	f.refresh()
	// Someone sets weights of their own after the agent's lister saw the route.
	edited := trafficRoute(90, 10)
	edited.ResourceVersion = "101"
	if err := f.gateway.Tracker().Update(gatewayv1.SchemeGroupVersion.WithResource("httproutes"), edited, ns); err != nil {
		t.Fatal(err)
	}
	f.refusePatch = func(p k8stesting.PatchActionImpl) error { // the resourceVersion test fails
		if !strings.Contains(string(p.GetPatch()), `"value":"101"`) {
			return apierrors.NewInvalid(schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"}, "checkout", nil)
		}
		return nil
	}
	actions, err := f.trySync()
	if !errors.Is(err, errStale) || !slices.Equal(actions, []string{routePatch(weightOps(80, 20))}) {
		t.Fatalf("actions %q, error %v; want only the refused patch and a stale error", actions, err)
	}
	f.wantEvent("Normal HTTPRouteChanged")
	if got := f.route(); got.CanaryWeight != 10 {
		t.Fatalf("the other edit was overwritten: canary weight %d", got.CanaryWeight)
	}
	f.refreshRoute()
	f.refresh()
	// Decided again from the route as it is now: its weights set on resourceVersion 101, and the
	// stable Deployment kept at what the route's stable weight of 90 needs until it shows 80.
	want := []string{patchRoute + `[{"op":"test","path":"/metadata/resourceVersion","value":"101"},` + weightOps(80, 20) + `]`,
		patchStable + replicas(9), writeStatus}
	if actions = f.sync(); !slices.Equal(actions, want) || f.route().CanaryWeight != 20 {
		t.Fatalf("actions %q, route %+v: want %q", actions, f.route(), want)
	}
}

// With dynamicStableScale the stable Deployment shrinks to what its weight needs once the route
// shows it, below what the canary's available pods would allow; without it, it never goes below
// that either way.
func TestTrafficDynamicStableScale(t *testing.T) {
	for _, dynamic := range []bool{false, true} {
		f := newTrafficFixture(t, trafficCanary(ptr.To[int32](50), nil, func(s *v1alpha1.CanarySpec) { s.DynamicStableScale = dynamic }),
			trafficRoute(100, 0), service("checkout-stable", "stable"), service("checkout-canary", "canary"))
		f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
		f.available("checkout-canary", 2)
		f.tstep(routePatch(weightOps(50, 50)), writeStatus)
		want := 8 // replicas − available canary pods
		if dynamic {
			want = 5 // ceil(10 × 50 / 100)
		}
		f.tstep(patchStable+replicas(want), writeStatus)
	}
}

func mustObserve(t *testing.T, f *trafficFixture) *observed {
	t.Helper()
	cn := f.canary()
	obs := &observed{canary: cn}
	if err := releaseFor(cn).observe(context.Background(), f.ctrl, obs); err != nil {
		t.Fatal(err)
	}
	return obs
}

// A rollback whose stable Deployment is already whole patches the route first and shrinks the
// canary only in a later sync, once the route as cached shows the canary no traffic.
func TestTrafficCanaryShrinksOnlyAfterTheRouteShowsZero(t *testing.T) {
	f := newTrafficFixture(t, trafficCanary(ptr.To[int32](20), nil, nil),
		trafficRoute(100, 0), service("checkout-stable", "stable"), service("checkout-canary", "canary"))
	f.tstep(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.tstep(routePatch(weightOps(80, 20)), writeStatus) // the stable Deployment is still at 10
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(routePatch(weightOps(100, 0)), writeStatus)
	f.tstep(patchCanary+replicas(0), writeStatus)
}
