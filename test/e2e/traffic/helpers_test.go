package traffic

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

const replicas = 4

var services = traffic.Services{Stable: "web-stable", Canary: "web-canary"}

type env struct {
	*e2eenv.Env
	gw gatewayclient.Interface
}

// setup makes the namespace with the stable Deployment (4 pods available) and starts the agent.
func setup(t *testing.T) *env {
	t.Helper()
	e := &env{Env: e2eenv.Setup(t)}
	e.WaitNamespaceGone = true
	gw, err := gatewayclient.NewForConfig(e.Cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	e.gw = gw
	labels := map[string]string{"app": "web", "track": "stable"}
	stable := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, "nginx:1.26"),
		},
	}
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Create(e.Ctx, stable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the stable Deployment's 4 pods available", func() (bool, string) {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == replicas, fmt.Sprintf("%d available", d.Status.AvailableReplicas)
	})
	e.StartAgent("canary")
	return e
}

func podTemplate(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
	}
}

// createService creates the Service of a track.
func (e *env) createService(name, track string) {
	e.T.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web", "track": track},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}},
		},
	}
	if _, err := e.Kube.CoreV1().Services(e.NS).Create(e.Ctx, svc, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// createRoute creates HTTPRoute web: path / to web-stable at 100 and web-canary at 0.
func (e *env) createRoute() {
	e.T.Helper()
	ref := func(name string, w int32) gatewayv1.HTTPBackendRef {
		return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
			BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: ptr.To(gatewayv1.PortNumber(80))},
			Weight:                 ptr.To(w),
		}}
	}
	route := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "gateway"}}},
			Rules:           []gatewayv1.HTTPRouteRule{{BackendRefs: []gatewayv1.HTTPBackendRef{ref(services.Stable, 100), ref(services.Canary, 0)}}},
		},
	}
	if _, err := e.gw.GatewayV1().HTTPRoutes(e.NS).Create(e.Ctx, route, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

var testerHeader = []v1alpha1.CanaryHeaderMatch{{Name: "x-canary", Value: "always"}}

// createCanary creates Canary web: step 1 one pod, weight 10 and the tester header, paused;
// step 2 half the pods, weight 50, paused; then everything.
func (e *env) createCanary() {
	e.T.Helper()
	cn := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.CanarySpec{
			Replicas:  replicas,
			MaxSurge:  ptr.To(intstr.FromString("100%")),
			StableRef: v1alpha1.StableRef{Name: "web"},
			Canary:    v1alpha1.CanaryTarget{Name: "web-canary", Template: podTemplate(map[string]string{"app": "web", "track": "canary"}, "nginx:1.27")},
			TrafficRouting: &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
				HTTPRoute: "web", StableService: services.Stable, CanaryService: services.Canary}},
			Steps: []v1alpha1.CanaryStep{
				{Replicas: intstr.FromInt32(1), Weight: ptr.To[int32](10), Matches: testerHeader, Pause: &v1alpha1.CanaryPause{}},
				{Replicas: intstr.FromString("50%"), Weight: ptr.To[int32](50), Pause: &v1alpha1.CanaryPause{}},
				{Replicas: intstr.FromString("100%")},
			},
		},
	}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, cn, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// pausedAtStep1 creates the Services, the route and the Canary, and waits until step 1 is
// paused with its weight and header route on the route.
func (e *env) pausedAtStep1() {
	e.T.Helper()
	e.createService(services.Stable, "stable")
	e.createService(services.Canary, "canary")
	e.createRoute()
	e.createCanary()
	e.waitPhase(v1alpha1.CanaryPaused, 1)
	e.waitRoute(10, true)
}

func (e *env) canary() *v1alpha1.Canary {
	e.T.Helper()
	c, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return c
}

// waitPhase waits for the Canary's phase at step k (0: any step), with its status caught up.
func (e *env) waitPhase(phase v1alpha1.CanaryPhase, k int32) {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("canary %s at step %d", phase, k), func() (bool, string) {
		c := e.canary()
		st := c.Status
		return st.Phase == phase && (k == 0 || st.CurrentBatch == k) && st.ObservedGeneration == c.Generation,
			fmt.Sprintf("%s at step %d: %s", st.Phase, st.CurrentBatch, st.Message)
	})
}

func (e *env) patchCanary(patch string) {
	e.T.Helper()
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Patch(e.Ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

func (e *env) promote(k int32) { e.patchCanary(fmt.Sprintf(`{"spec":{"approvedBatch":%d}}`, k)) }

// route reads what the route carries.
func (e *env) route() (traffic.Observed, *gatewayv1.HTTPRoute) {
	e.T.Helper()
	r, err := e.gw.GatewayV1().HTTPRoutes(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	obs, err := traffic.Observe(r, services)
	if err != nil {
		e.T.Fatal(err)
	}
	return obs, r
}

// waitRoute waits until the route carries the canary weight and header rule, and the Canary's
// status says so.
func (e *env) waitRoute(weight int32, header bool) {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("route at canary weight %d, header route %v", weight, header), func() (bool, string) {
		obs, _ := e.route()
		st := e.canary().Status.TrafficRouting
		ok := obs.CanaryWeight == weight && (obs.HeaderRule >= 0) == header &&
			st != nil && st.ActualWeight == weight && st.HeaderRoute == header
		return ok, fmt.Sprintf("route %+v, status %+v", obs, st)
	})
}

// routeWatcher records every version of the route and every canary pod's removal (deletion
// timestamp set, or deleted), with their resourceVersions, to check when the test ends that no
// canary pod was removed while the route then in force sent it traffic. resourceVersions of
// one etcd order the two kinds of events; the check runs at the end, when both watches have
// delivered everything up to then, so delivery order does not matter.
type routeWatcher struct {
	mu       sync.Mutex
	versions []routeVersion
	removals []removal
	errs     []string
}

type routeVersion struct {
	rv     int64
	served bool // canary weight > 0 or header rule present
	desc   string
}

type removal struct {
	rv  int64
	pod string
}

func rvOf(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

func (e *env) watchRouteAndPods() *routeWatcher {
	e.T.Helper()
	w := &routeWatcher{}
	rw, err := e.gw.GatewayV1().HTTPRoutes(e.NS).Watch(e.Ctx, metav1.ListOptions{FieldSelector: "metadata.name=web"})
	if err != nil {
		e.T.Fatal(err)
	}
	pw, err := e.Kube.CoreV1().Pods(e.NS).Watch(e.Ctx, metav1.ListOptions{LabelSelector: "track=canary"})
	if err != nil {
		e.T.Fatal(err)
	}
	go w.routes(rw)
	go w.pods(pw)
	e.T.Cleanup(func() { rw.Stop(); pw.Stop() })
	return w
}

func (w *routeWatcher) routes(wi watch.Interface) {
	for ev := range wi.ResultChan() {
		r, ok := ev.Object.(*gatewayv1.HTTPRoute)
		if !ok {
			continue
		}
		obs, err := traffic.Observe(r, services)
		w.mu.Lock()
		if err != nil {
			w.errs = append(w.errs, err.Error())
		}
		w.versions = append(w.versions, routeVersion{rv: rvOf(r.ResourceVersion), served: obs.CanaryWeight > 0 || obs.HeaderRule >= 0,
			desc: fmt.Sprintf("canary weight %d, header rule %v", obs.CanaryWeight, obs.HeaderRule >= 0)})
		w.mu.Unlock()
	}
}

func (w *routeWatcher) pods(wi watch.Interface) {
	seen := map[string]bool{}
	for ev := range wi.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || seen[p.Name] || (ev.Type != watch.Deleted && p.DeletionTimestamp == nil) {
			continue
		}
		seen[p.Name] = true
		w.mu.Lock()
		w.removals = append(w.removals, removal{rv: rvOf(p.ResourceVersion), pod: p.Name})
		w.mu.Unlock()
	}
}

// verify fails the test for every canary pod removed while the route version in force (the
// latest below the removal's resourceVersion) sent the canary traffic; it returns the number of
// removals checked.
func (w *routeWatcher) verify(t testing.TB) int {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs {
		t.Errorf("route watcher: %s", e)
	}
	for _, rm := range w.removals {
		var inForce *routeVersion
		for i := range w.versions {
			if v := &w.versions[i]; v.rv < rm.rv && (inForce == nil || v.rv > inForce.rv) {
				inForce = v
			}
		}
		if inForce != nil && inForce.served {
			t.Errorf("canary pod %s removed (resourceVersion %d) while the route (resourceVersion %d) had %s", rm.pod, rm.rv, inForce.rv, inForce.desc)
		}
	}
	return len(w.removals)
}

// deploymentReplicas is a Deployment's spec.replicas, -1 when it does not exist.
// waitScaleDownTime waits for a switched blue-green Canary's scale-down delay to run and returns
// the time its status sets for the old side's scale-down.
func (e *env) waitScaleDownTime() time.Time {
	var at time.Time
	e.Eventually("the scale-down delay running", func() (bool, string) {
		bg := e.canary().Status.BlueGreen
		if bg == nil || bg.ScaleDownTime == nil {
			return false, fmt.Sprintf("status.blueGreen %+v", bg)
		}
		at = bg.ScaleDownTime.Time
		return true, ""
	})
	return at
}

func (e *env) deploymentReplicas(name string) int32 {
	e.T.Helper()
	d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return -1
	}
	if err != nil {
		e.T.Fatal(err)
	}
	return ptr.Deref(d.Spec.Replicas, 1)
}

// inform runs an informer over lw (relisting across expired watches) until the test ends,
// calling on with every state of an object it sees, and last its deletion (deleted true, with
// its last state). It returns once the informer has synced.
func (e *env) inform(lw *cache.ListWatch, obj runtime.Object, on func(o any, deleted bool)) {
	e.T.Helper()
	inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { on(o, false) },
		UpdateFunc: func(_, o any) { on(o, false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			on(o, true)
		},
	})
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	e.T.Cleanup(func() { cancel(); <-done })
}

// listWatch lists and watches through a typed client's List and Watch, with the options set by
// opts (a selector).
func listWatch[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), opts func(*metav1.ListOptions)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			opts(&o)
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			opts(&o)
			return watchFn(ctx, o)
		},
	}
}
