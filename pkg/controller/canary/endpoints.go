package canary

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A blue-green release through an HTTPRoute moves the whole traffic onto a Service (the switch
// 0→100, the switch-back, the hand-over's 100/0) only once that Service's EndpointSlices list
// the side's pods ready (docs/canary-targets.md, "Endpoints before a whole route move"): the
// Deployment's available count comes from kube-controller-manager's Deployment controller, the
// slices from its EndpointSlice controller, which can trail it by a moment. The slices are
// listed from the API server when a move is planned, never cached: one list per planned move.

// switchBackEndpointWait bounds how long a switch-back after a failure or an abort waits for
// the stable Service's endpoints: the old pods are all available, and the new version, which
// failed, keeps every request meanwhile.
const switchBackEndpointWait = 10 * time.Second

// endpointRead is what a sync read of a Service's EndpointSlices for one planned move: its ready
// endpoints, or why they could not be listed, and, while the move cannot be made, since when it
// has waited.
type endpointRead struct {
	ready int32
	err   error
	since time.Time
}

// endpointReader reads the ready endpoints of a Service for a planned move of the route at
// resourceVersion routeRV, which needs want of them.
type endpointReader func(service, routeRV string, want int32) endpointRead

// endpointWait is the one move a Canary waits for: which Service, the route's resourceVersion
// when it was planned, and since when.
type endpointWait struct {
	service, routeRV string
	since            time.Time
}

// endpointsOf is the endpointReader of a sync of Canary key in namespace ns: it lists the
// Service's EndpointSlices (label kubernetes.io/service-name) from the API server, a consistent
// read, and remembers since when a move lacks endpoints (the agent's memory only: a restart
// starts the wait again).
func (c *Controller) endpointsOf(ctx context.Context, key, ns string) endpointReader {
	return func(service, routeRV string, want int32) endpointRead {
		var read endpointRead
		list, err := c.kubeClient.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			read.err = err
		} else {
			read.ready = readyEndpoints(list.Items)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if err == nil && read.ready >= want {
			delete(c.endpointWaits, key)
			return read
		}
		w, ok := c.endpointWaits[key]
		if !ok || w.service != service || w.routeRV != routeRV {
			w = endpointWait{service: service, routeRV: routeRV, since: c.clock.Now()}
			c.endpointWaits[key] = w
		}
		read.since = w.since
		return read
	}
}

func (c *Controller) forgetEndpointWait(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.endpointWaits, key)
}

// readyEndpoints counts the ready endpoints of slices, each once: a dual-stack Service lists a
// pod in one slice per address type, and a pod may move between slices. An endpoint is told by
// its target (the pod), else by its first address. A nil ready condition is ready, as the API
// says consumers must read it.
func readyEndpoints(slices []discoveryv1.EndpointSlice) int32 {
	seen := map[string]bool{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if r := e.Conditions.Ready; r != nil && !*r {
				continue
			}
			switch {
			case e.TargetRef != nil:
				seen[e.TargetRef.Kind+"/"+e.TargetRef.Namespace+"/"+e.TargetRef.Name] = true
			case len(e.Addresses) > 0:
				seen["address/"+e.Addresses[0]] = true
			}
		}
	}
	return int32(len(seen))
}

// wholeMoveService is the Service a blue-green route patch of this sync moves every request to,
// "" when the patch moves none (it keeps the weights, or the release is not blue-green).
func (r *pairPlan) wholeMoveService() string {
	t := r.traffic
	if t == nil || t.patch == nil || r.canary.Spec.BlueGreen == nil || t.weight == t.current.CanaryWeight {
		return ""
	}
	switch t.weight {
	case 0:
		return r.services().Stable
	case 100:
		return r.services().Canary
	}
	return ""
}

// awaitEndpoints holds a whole route move until the destination Service lists spec.replicas
// ready endpoints: the route is not patched, the sync is looked at again in a second, and the
// status says why. A switch-back (a rollback) waits at most switchBackEndpointWait, then moves
// with a Warning Event, also when the slices cannot be listed.
func (r *pairPlan) awaitEndpoints() {
	svc := r.wholeMoveService()
	if svc == "" {
		return
	}
	t, want := r.traffic, r.canary.Spec.Replicas
	read := r.obs.endpoints(svc, t.obs.route.ResourceVersion, want)
	if read.err == nil && read.ready >= want {
		return
	}
	found := fmt.Sprintf("%d of %d ready", read.ready, want)
	if read.err != nil {
		found = fmt.Sprintf("listing its EndpointSlices: %v", read.err)
	}
	if r.rollsBack() && r.now.Sub(read.since) >= switchBackEndpointWait {
		r.event(corev1.EventTypeWarning, v1alpha1.EventEndpointsLagging,
			"switching back to Service %q though its endpoints are not all there (%s): waited %s, the most a switch-back waits", svc, found, switchBackEndpointWait)
		return
	}
	t.patch = nil
	msg := fmt.Sprintf("waiting for Service %q's endpoints: %s", svc, found)
	if r.message != "" {
		msg = r.message + "; " + msg
	}
	r.message = msg
	r.requeueAt(r.now.Add(time.Second))
}
