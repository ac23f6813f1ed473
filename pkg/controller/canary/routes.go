package canary

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
	gatewaylisters "sigs.k8s.io/gateway-api/pkg/client/listers/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeinformers"
	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
)

// routeIndex indexes Canaries by the namespace/name of the HTTPRoute they route through.
const routeIndex = "canary.apps.workload.dev/httproutes"

// serviceTTL is how long a Service read from the API server is trusted. Services are read, not
// watched: the agent only checks them, and a watch of every Service would cache objects it
// never acts on (docs/architecture.md, "What the agent caches"). A Service fixed by its owner is seen within serviceTTL.
const serviceTTL = 15 * time.Second

// trafficClients are what the controller needs for spec.trafficRouting; nil when the cluster
// has no Gateway API (every Canary with traffic routing then says GatewayAPIUnavailable).
type trafficClients struct {
	gateway  gatewayclient.GatewayV1Interface
	routes   gatewaylisters.HTTPRouteLister
	kube     kubeclient.Interface
	mu       sync.Mutex
	services map[string]cachedService
}

type cachedService struct {
	svc     *corev1.Service // nil: not found
	fetched time.Time
}

// enableTraffic lets the controller route traffic: HTTPRoutes come from routes, an informer of
// the agent's namespace scope (HTTPRoutes are few, configuration-sized objects: caching those
// of the scope costs little, and a watch lets a route edited by someone else be corrected at
// once); patches go through gateway. Call it before the informers start.
func (c *Controller) enableTraffic(gateway gatewayclient.GatewayV1Interface, routes kubeinformers.HTTPRouteInformer) error {
	c.traffic = &trafficClients{gateway: gateway, routes: routes.Lister(), kube: c.kubeClient, services: map[string]cachedService{}}
	if _, ok := c.canaryIndexer.GetIndexers()[routeIndex]; !ok {
		if err := c.canaryIndexer.AddIndexers(cache.Indexers{routeIndex: indexByRoute}); err != nil {
			return fmt.Errorf("indexing Canaries by HTTPRoute: %w", err)
		}
	}
	return c.Watch(routes.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.handleRoute,
		UpdateFunc: func(_, obj interface{}) { c.handleRoute(obj) },
		DeleteFunc: c.handleRoute,
	})
}

func indexByRoute(obj interface{}) ([]string, error) {
	cn, ok := obj.(*v1alpha1.Canary)
	if !ok || cn.Spec.TrafficRouting == nil {
		return nil, nil
	}
	return []string{cn.Namespace + "/" + cn.Spec.TrafficRouting.GatewayAPI.HTTPRoute}, nil
}

// handleRoute enqueues the Canaries that route through an HTTPRoute.
func (c *Controller) handleRoute(obj interface{}) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	canaries, err := c.canaryIndexer.ByIndex(routeIndex, o.GetNamespace()+"/"+o.GetName())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, cn := range canaries {
		c.Enqueue(cn)
	}
}

// service returns a Service (nil when it does not exist), from the cache while it is fresh.
func (t *trafficClients) service(ctx context.Context, ns, name string, now time.Time) (*corev1.Service, error) {
	key := ns + "/" + name
	t.mu.Lock()
	hit, ok := t.services[key]
	t.mu.Unlock()
	if ok && now.Sub(hit.fetched) < serviceTTL {
		return hit.svc, nil
	}
	svc, err := t.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.services[key] = cachedService{svc: svc, fetched: now}
	t.mu.Unlock()
	return svc, nil
}

// observeTraffic reads what spec.trafficRouting names: the route from the lister, the Services
// through the cache. nil when the Canary routes no traffic.
func (c *Controller) observeTraffic(ctx context.Context, cn *v1alpha1.Canary) (*trafficObserved, error) {
	if cn.Spec.TrafficRouting == nil {
		return nil, nil
	}
	if c.traffic == nil {
		return &trafficObserved{unavailable: true}, nil
	}
	g := cn.Spec.TrafficRouting.GatewayAPI
	obs := &trafficObserved{}
	route, err := c.traffic.routes.HTTPRoutes(cn.Namespace).Get(g.HTTPRoute)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil {
		obs.route = route.DeepCopy()
	}
	now := c.clock.Now()
	if obs.stableSvc, err = c.traffic.service(ctx, cn.Namespace, g.StableService, now); err != nil {
		return nil, err
	}
	if obs.canarySvc, err = c.traffic.service(ctx, cn.Namespace, g.CanaryService, now); err != nil {
		return nil, err
	}
	return obs, nil
}

// writeRoute patches the route as planned, before any Deployment write. A patch refused because
// the route changed since it was read (its resourceVersion differs now) is a concurrent edit:
// reported with an Event and retried from a fresh read, never forced; any other refusal is a
// failure shown on the Canary. A route whose weights another field manager keeps changing back
// is not written at all (contestRoute).
func (c *Controller) writeRoute(ctx context.Context, r *decision) (*failure, error) {
	t := r.traffic
	if t == nil || t.reason != "" {
		return nil, nil
	}
	route := t.obs.route
	canary, object := r.canary.Namespace+"/"+r.canary.Name, "HTTPRoute/"+route.Name
	e := c.contests.get(canary, object)
	if t.patch == nil {
		// The route carries what the release needs. Set so by someone else (not the agent's own
		// write, seen now), nothing is contested: the count starts again.
		rv := route.ResourceVersion
		if rv != e.base && rv != e.written && (e.count > 0 || e.wrote != routeState(t.current)) {
			c.contests.set(canary, object, contest{wrote: routeState(t.current), base: rv, written: rv})
		}
		return nil, nil
	}
	routes := c.traffic.gateway.HTTPRoutes(route.Namespace)
	if f, err := c.contestRoute(ctx, r, &e); f != nil || err != nil {
		c.contests.set(canary, object, e)
		return f, err
	}
	out, err := routes.Patch(ctx, route.Name, types.JSONPatchType, t.patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerAgent})
	if err == nil {
		t.written = out
		if obs, err := traffic.Observe(out, r.services()); err == nil {
			e.wrote, e.base, e.written = routeState(obs), route.ResourceVersion, out.ResourceVersion
		}
		c.contests.set(canary, object, e)
		c.Recorder.Eventf(r.canary, corev1.EventTypeNormal, v1alpha1.EventTrafficShifted,
			"HTTPRoute %q: canary weight %d%%, header route %v", route.Name, t.weight, len(t.matches) > 0)
		return nil, nil
	}
	now, getErr := routes.Get(ctx, route.Name, metav1.GetOptions{})
	if getErr == nil && now.ResourceVersion != route.ResourceVersion {
		c.Recorder.Eventf(r.canary, corev1.EventTypeNormal, v1alpha1.EventHTTPRouteChanged,
			"HTTPRoute %q changed since it was read (resourceVersion %s, now %s): reading it again", route.Name, route.ResourceVersion, now.ResourceVersion)
		return nil, fmt.Errorf("HTTPRoute %s/%s changed concurrently: %w", route.Namespace, route.Name, errStale)
	}
	f := &failure{reason: v1alpha1.ReasonHTTPRouteWriteFailed, message: fmt.Sprintf("patching HTTPRoute %q: %v", route.Name, err)}
	c.Recorder.Eventf(r.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
	return f, fmt.Errorf("%s: %w", f.message, err)
}

// routeState is what the agent owns on a route, as a value to compare: the canary's weight and
// the header rule's headers.
func routeState(o traffic.Observed) string {
	return fmt.Sprintf("weight %d, header rule %t %v", o.CanaryWeight, o.HeaderRule >= 0, o.Matches)
}

// contestRoute decides whether another controller keeps changing the route's weights back
// (docs/traffic.md, "Another controller on the route"; changedBackTooOften): the manager that
// last wrote spec.rules (an atomic list) is the one that changed them. Once one did so
// contestLimit times in a row, the failure it returns makes the Canary Degraded, naming the
// manager, and nothing of the release moves. A change by someone else (a person setting the
// weights by hand), or a route that carries what the release needs, starts the count again.
func (c *Controller) contestRoute(ctx context.Context, r *decision, e *contest) (*failure, error) {
	t, route := r.traffic, r.traffic.obs.route
	wasContested := e.contested()
	stop, err := changedBackTooOften(ctx, e, route.ResourceVersion, routeState(t.current), func(ctx context.Context) ([]metav1.ManagedFieldsEntry, error) {
		fresh, err := c.traffic.gateway.HTTPRoutes(route.Namespace).Get(ctx, route.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading HTTPRoute %s/%s for its field managers: %w", route.Namespace, route.Name, err)
		}
		return fresh.ManagedFields, nil
	}, "f:spec", "f:rules")
	if !stop || err != nil {
		return nil, err
	}
	f := &failure{reason: v1alpha1.ReasonHTTPRouteContested, message: fmt.Sprintf(
		"HTTPRoute %q: %s changed back the weights the agent set, %d times in a row (the route gives the canary %d%%, the release needs %d%%): "+
			"the agent stopped writing the route so as not to fight another controller, and nothing of the release moves. "+
			"Make that controller leave this route (an Argo Rollout: remove the route from its trafficRouting, or delete the Rollout), "+
			"then set the weights once by hand (kubectl edit httproute %s): the agent resumes at a change by anyone else",
		route.Name, e.who(), contestLimit, t.current.CanaryWeight, t.weight, route.Name)}
	t.reason, t.message = f.reason, f.message
	if !wasContested {
		c.Recorder.Eventf(r.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
	}
	return f, nil
}

// selects reports whether a Service's selector selects pods with the labels.
func selects(svc *corev1.Service, podLabels map[string]string) bool {
	return len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels))
}
