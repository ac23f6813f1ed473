package canary

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// listSlices is the action of listing a Service's EndpointSlices.
func listSlices(service string) string {
	return "list endpointslices " + discoveryv1.LabelServiceName + "=" + service
}

// serveEndpointSlices plays kube-controller-manager's EndpointSlice controller for the fake API
// server: a list of a Service's EndpointSlices shows, ready, the available pods of every
// Deployment whose pod template the Service selects, less the Service's endpointLag; each pod is
// listed twice, in an IPv4 and an IPv6 slice (a dual-stack Service), and one not-ready endpoint
// is added. The list is recorded among the actions, with its label selector.
func (f *trafficFixture) serveEndpointSlices() {
	f.kube.PrependReactor("list", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.ListActionImpl).GetListRestrictions().Labels
		f.actions = append(f.actions, "list endpointslices "+sel.String())
		name, _ := sel.RequiresExactMatch(discoveryv1.LabelServiceName)
		svc, err := f.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("services"), ns, name)
		if err != nil {
			return true, &discoveryv1.EndpointSliceList{}, nil
		}
		selector := labels.SelectorFromSet(svc.(*corev1.Service).Spec.Selector)
		list, err := f.kube.Tracker().List(deploymentsGVR, appsv1.SchemeGroupVersion.WithKind("Deployment"), ns)
		if err != nil {
			return true, nil, err
		}
		var pods []string
		for _, d := range list.(*appsv1.DeploymentList).Items {
			if selector.Matches(labels.Set(d.Spec.Template.Labels)) {
				for i := range d.Status.AvailableReplicas {
					pods = append(pods, fmt.Sprintf("%s-%d", d.Name, i))
				}
			}
		}
		pods = pods[:max(0, len(pods)-int(f.endpointLag[name]))]
		return true, &discoveryv1.EndpointSliceList{Items: []discoveryv1.EndpointSlice{
			endpointSlice(name, discoveryv1.AddressTypeIPv4, pods),
			endpointSlice(name, discoveryv1.AddressTypeIPv6, pods),
		}}, nil
	})
}

func endpointSlice(service string, family discoveryv1.AddressType, pods []string) discoveryv1.EndpointSlice {
	s := discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: service + "-" + strings.ToLower(string(family)), Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: family,
		Endpoints: []discoveryv1.Endpoint{{ // a pod starting
			Addresses:  []string{"starting"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: service + "-starting"},
		}},
	}
	for i, p := range pods {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("%s-%d", family, i)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p},
		})
	}
	return s
}

// wantWaiting checks that the Canary's status message says it waits for the Service's endpoints,
// the route not moved (desired weight, actual weight), and that the sync comes back in a second.
func (f *trafficFixture) wantWaiting(service string, ready, want, desired, actual int32) {
	f.t.Helper()
	cn := f.canary()
	msg := fmt.Sprintf("waiting for Service %q's endpoints: %d of %d ready", service, ready, want)
	if !strings.Contains(cn.Status.Message, msg) {
		f.t.Fatalf("status message %q, want it to say %q", cn.Status.Message, msg)
	}
	if tr := cn.Status.TrafficRouting; tr == nil || tr.DesiredWeight != desired || tr.ActualWeight != actual {
		f.t.Fatalf("status.trafficRouting %+v, want desired %d, actual %d", tr, desired, actual)
	}
	f.refreshRoute()
	f.refresh()
	if r := computePlan(mustObserve(f.t, f), metav1.NewTime(f.clock.Now())); r.requeueAfter != time.Second {
		f.t.Fatalf("requeueAfter %s, want 1s while the endpoints lag", r.requeueAfter)
	}
}

// The switch lists the preview Service's EndpointSlices before the route patch, and moves only
// once they list all 4 pods ready: with 3 of 4 listed (a not-ready one aside, each pod in two
// address families) the route stays at 0 and the status says why.
func TestBlueGreenRouteSwitchWaitsForThePreviewEndpoints(t *testing.T) {
	f := blueGreenRouteFixture(t, nil)
	routePreviewUp(f)
	f.endpointLag = map[string]int32{"checkout-canary": 1}
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), writeStatus)
	f.wantRoute(0, false)
	f.wantWaiting("checkout-canary", 3, 4, 100, 0)
	if n := replicasOf(f.deployment("checkout")); n != 4 {
		t.Fatalf("stable Deployment at %d while the route gives it everything", n)
	}
	f.tstep(listSlices("checkout-canary")) // still lagging: nothing to write
	f.endpointLag = nil
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.wantRoute(100, false)
	if msg := f.canary().Status.Message; strings.Contains(msg, "waiting for Service") {
		t.Fatalf("status message %q after the switch", msg)
	}
	f.tstep() // switched: no move planned, no list
}

// switchedBackLagging switches a route-switched blue-green release, then rolls it back with the
// stable Service's EndpointSlices lacking lag of its 4 pods: the route stays on the new pods.
func switchedBackLagging(t *testing.T, lag int32) *trafficFixture {
	t.Helper()
	f := blueGreenRouteFixture(t, nil)
	routePreviewUp(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	f.endpointLag = map[string]int32{"checkout-stable": lag}
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(listSlices("checkout-stable"), writeStatus)
	f.wantRoute(100, false)
	f.wantWaiting("checkout-stable", 4-lag, 4, 0, 100)
	return f
}

// A switch-back waits for the stable Service's endpoints too, the new pods keeping every
// request meanwhile, but at most switchBackEndpointWait: then the route moves with a Warning.
func TestBlueGreenRouteSwitchBackWaitsForEndpointsAtMostTheBound(t *testing.T) {
	f := switchedBackLagging(t, 1)
	f.clock.Step(switchBackEndpointWait - time.Second)
	f.tstep(listSlices("checkout-stable"))
	if n := replicasOf(f.deployment("checkout-canary")); n != 4 {
		t.Fatalf("canary Deployment at %d while the route gives it everything", n)
	}
	f.clock.Step(time.Second)
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
	f.wantEvent("Warning " + v1alpha1.EventEndpointsLagging)
}

// A switch-back whose stable endpoints catch up within the bound moves as soon as they do, with
// no Warning.
func TestBlueGreenRouteSwitchBackMovesOnceTheEndpointsCatchUp(t *testing.T) {
	f := switchedBackLagging(t, 2)
	f.clock.Step(2 * time.Second)
	f.endpointLag = nil
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
	for _, e := range f.events() {
		if strings.Contains(e, v1alpha1.EventEndpointsLagging) {
			t.Fatalf("event %q: the endpoints caught up within the bound", e)
		}
	}
}

// The hand-over of a Deployment target moves the route back to the stable Service only once its
// EndpointSlices list every new pod ready, however long that takes (the temporary pods serve
// meanwhile); the temporary Deployment stays until the route shows 0.
func TestBlueGreenTargetRouteHandOverWaitsForTheEndpoints(t *testing.T) {
	f := targetRoutePreview(t, nil)
	targetRouteHandingOver(f)
	f.endpointLag = map[string]int32{"checkout-stable": 1}
	f.tstep(listSlices("checkout-stable"), writeStatus)
	f.wantRoute(100, false)
	f.wantWaiting("checkout-stable", 1, 2, 0, 100)
	f.clock.Step(time.Minute)
	f.tstep(listSlices("checkout-stable"))
	if n := replicasOf(f.deployment("checkout-canary")); n != 2 {
		t.Fatalf("temporary Deployment at %d while the route gives it everything", n)
	}
	f.endpointLag = nil
	f.tstep(listSlices("checkout-stable"), routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
}

// readyEndpoints counts each ready pod once across slices and address families, an endpoint
// with no ready condition as ready, one without a target by its address.
func TestReadyEndpoints(t *testing.T) {
	ep := func(pod, addr string, ready *bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
		if pod != "" {
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod}
		}
		return e
	}
	slices := []discoveryv1.EndpointSlice{
		{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{
			ep("a", "10.0.0.1", ptr.To(true)), ep("b", "10.0.0.2", nil), ep("c", "10.0.0.3", ptr.To(false)), ep("", "10.0.0.9", ptr.To(true))}},
		{AddressType: discoveryv1.AddressTypeIPv6, Endpoints: []discoveryv1.Endpoint{
			ep("a", "fd00::1", ptr.To(true)), ep("b", "fd00::2", ptr.To(true)), ep("d", "fd00::4", ptr.To(true))}},
		{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{ep("d", "10.0.0.4", ptr.To(true))}},
	}
	if got := readyEndpoints(slices); got != 4 {
		t.Fatalf("readyEndpoints = %d, want 4 (a, b, d and the address 10.0.0.9; c not ready)", got)
	}
	if got := readyEndpoints(nil); got != 0 {
		t.Fatalf("readyEndpoints(nil) = %d", got)
	}
}

// A switch-back whose EndpointSlices cannot be listed (the agent's ClusterRole not updated, for
// instance) waits as for lagging ones, then moves after the bound: the new version, which
// failed, is not kept on for good.
func TestBlueGreenRouteSwitchBackMovesAfterTheBoundWhenTheSlicesCannotBeListed(t *testing.T) {
	f := blueGreenRouteFixture(t, nil)
	routePreviewUp(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.tstep(listSlices("checkout-canary"), routePatch(weightOps(0, 100)), writeStatus)
	const refused = "list endpointslices (refused)"
	f.kube.PrependReactor("list", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		f.actions = append(f.actions, refused)
		return true, nil, apierrors.NewForbidden(discoveryv1.Resource("endpointslices"), "", fmt.Errorf("not granted"))
	})
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(refused, writeStatus)
	f.wantRoute(100, false)
	if msg := f.canary().Status.Message; !strings.Contains(msg, `waiting for Service "checkout-stable"'s endpoints: listing its EndpointSlices:`) {
		t.Fatalf("status message %q", msg)
	}
	f.clock.Step(switchBackEndpointWait)
	f.tstep(refused, routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
	f.wantEvent("Warning " + v1alpha1.EventEndpointsLagging)
}
