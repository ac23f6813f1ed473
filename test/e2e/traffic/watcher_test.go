package traffic

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }

// The watcher's check fails a canary pod removed while the route in force (by resourceVersion)
// sent the canary traffic, and passes one removed after the route sent it nothing, whatever
// order the two watches delivered them in. It needs no cluster.
func TestRouteWatcherVerify(t *testing.T) {
	w := &routeWatcher{
		removals: []removal{{rv: 15, pod: "early"}, {rv: 25, pod: "late"}},
		versions: []routeVersion{
			{rv: 20, served: false, desc: "canary weight 0"},
			{rv: 10, served: true, desc: "canary weight 10"},
		},
	}
	r := &recorder{TB: t}
	if n := w.verify(r); n != 2 {
		t.Errorf("checked %d removals, want 2", n)
	}
	if len(r.errs) != 1 || r.errs[0] != "canary pod early removed (resourceVersion 15) while the route (resourceVersion 10) had canary weight 10" {
		t.Errorf("failures %q, want only the pod removed under weight 10", r.errs)
	}
}

// The side watcher's replay goes by resourceVersion, whatever order the informers delivered in;
// it arms once the active side is whole, then fails a state where the active Service selects
// two images (or fewer than replicas ready pods, or its Deployment has too few available), and
// describes web-canary at each switch and web-stable at each switch-back. It needs no cluster.
func TestSideWatcherCheck(t *testing.T) {
	slice := func(service string, pods ...string) *discoveryv1.EndpointSlice {
		sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: service + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: service}}}
		for _, p := range pods {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{TargetRef: &corev1.ObjectReference{Name: p}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		}
		return sl
	}
	w := &sideWatcher{images: map[string]string{"o1": oldImage, "o2": oldImage, "o3": oldImage, "o4": oldImage,
		"n1": newImage, "n2": newImage, "n3": newImage, "n4": newImage}}
	route := func(weight int32) func(*sideState) { return func(s *sideState) { s.routed, s.weight = true, weight } }
	setSlice := func(sl *discoveryv1.EndpointSlice) func(*sideState) {
		return func(s *sideState) { s.slices[sl.Name] = sl }
	}
	available := func(d string, n int32) func(*sideState) { return func(s *sideState) { s.available[d] = n } }
	w.entries = []sideEntry{ // delivered out of order
		{rv: 40, apply: route(100)},
		{rv: 10, apply: route(0)},
		{rv: 12, apply: setSlice(slice(services.Stable, "o1", "o2", "o3", "o4"))},
		{rv: 11, apply: available("web", 4)},
		{rv: 30, apply: setSlice(slice(services.Canary, "n1", "n2", "n3", "n4"))},
		{rv: 31, apply: available(temporary, 4)},
		{rv: 50, apply: setSlice(slice(services.Stable, "o1", "n1", "n2", "n3", "n4"))}, // not active: no violation
		{rv: 51, apply: available("web", 4)},
		{rv: 60, apply: route(0)},                                           // back while web-stable selects both images
		{rv: 70, apply: setSlice(slice(services.Stable, "n1", "n2", "n3"))}, // lagging: fails
		{rv: 80, apply: setSlice(slice(services.Stable))},                   // none ready: fails
	}
	rep := w.check()
	if len(rep.violations) != 3 || !strings.Contains(rep.violations[0], "resourceVersion 60, route at canary weight 0: Service web-stable has \"nginx:1.26\": 1 endpoints, 1 ready; \"nginx:1.27\": 4 endpoints, 4 ready") ||
		!strings.Contains(rep.violations[1], "resourceVersion 70, route at canary weight 0: Service web-stable has \"nginx:1.27\": 3 endpoints, 3 ready") ||
		!strings.Contains(rep.violations[2], "resourceVersion 80, route at canary weight 0: Service web-stable has no endpoints") {
		t.Errorf("violations %q, want the ones at resourceVersions 60, 70 and 80", rep.violations)
	}
	if rep.fewestReady != 0 {
		t.Errorf("fewest ready endpoints %d, want 0", rep.fewestReady)
	}
	if want := []string{`"nginx:1.27": 4 endpoints, 4 ready`}; !slices.Equal(rep.switches, want) {
		t.Errorf("switches %q, want %q", rep.switches, want)
	}
	if want := []string{`"nginx:1.26": 1 endpoints, 1 ready; "nginx:1.27": 4 endpoints, 4 ready`}; !slices.Equal(rep.switchBacks, want) {
		t.Errorf("switch-backs %q, want %q", rep.switchBacks, want)
	}
	if rep.states != 9 {
		t.Errorf("%d states checked, want 9 (from resourceVersion 12 on)", rep.states)
	}

	w.entries = w.entries[:2] // never whole: nothing checked, which is a failure
	if rep := w.check(); len(rep.violations) != 1 || rep.violations[0] != "the active side was never seen whole" {
		t.Errorf("violations %q, want the never-whole one", rep.violations)
	}
}
