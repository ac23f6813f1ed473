package traffic

import (
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

var svcs = Services{Stable: "web-stable", Canary: "web-canary"}

func backend(name string, weight *int32) gatewayv1.HTTPBackendRef {
	return gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{Name: gatewayv1.ObjectName(name), Port: ptr.To(gatewayv1.PortNumber(80))},
		Weight:                 weight,
	}}
}

func route(rules ...gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "7"},
		Spec:       gatewayv1.HTTPRouteSpec{Rules: rules},
	}
}

func weighted(stable, canary int32) gatewayv1.HTTPRouteRule {
	return gatewayv1.HTTPRouteRule{
		Matches:     []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Value: ptr.To("/api")}}},
		BackendRefs: []gatewayv1.HTTPBackendRef{backend("web-stable", &stable), backend("web-canary", &canary)},
	}
}

// apply applies a patch as the API server would, failing the test if a test operation fails.
func apply(t *testing.T, r *gatewayv1.HTTPRoute, patch []byte) *gatewayv1.HTTPRoute {
	t.Helper()
	doc, _ := json.Marshal(r)
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("applying %s: %v", patch, err)
	}
	got := &gatewayv1.HTTPRoute{}
	if err := json.Unmarshal(out, got); err != nil {
		t.Fatal(err)
	}
	return got
}

var testerHeader = []v1alpha1.CanaryHeaderMatch{{Name: "x-canary", Value: "yes"}}

func TestPlanSetsWeightsAndHeaderRule(t *testing.T) {
	r := route(weighted(100, 0), gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{backend("other", nil)}})
	patch, err := Plan(r, svcs, Desired{CanaryWeight: 30, Matches: testerHeader})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(patch), `[{"op":"test","path":"/metadata/resourceVersion","value":"7"}`) {
		t.Fatalf("patch does not test the resourceVersion first: %s", patch)
	}
	got := apply(t, r, patch)
	obs, err := Observe(got, svcs)
	if err != nil {
		t.Fatal(err)
	}
	if obs.CanaryWeight != 30 || obs.HeaderRule != 2 || !SameMatches(obs.Matches, testerHeader) {
		t.Fatalf("observed %+v after %s", obs, patch)
	}
	if w := *got.Spec.Rules[0].BackendRefs[0].Weight; w != 70 {
		t.Errorf("stable weight %d, want 70", w)
	}
	if got.Spec.Rules[1].BackendRefs[0].Weight != nil {
		t.Errorf("a rule not sending to both Services was changed: %+v", got.Spec.Rules[1])
	}
	hr := got.Spec.Rules[2]
	if len(hr.BackendRefs) != 1 || hr.BackendRefs[0].Name != "web-canary" || *hr.Matches[0].Path.Value != "/api" {
		t.Errorf("header rule %+v: want the canary only, on the weighted rule's path", hr)
	}
	// Nothing left to do: no patch.
	if again, err := Plan(got, svcs, Desired{CanaryWeight: 30, Matches: testerHeader}); err != nil || again != nil {
		t.Errorf("second plan: %s, %v; want none", again, err)
	}
	// The next step without matches removes the rule, testing its name first.
	patch, err = Plan(got, svcs, Desired{CanaryWeight: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(patch), `{"op":"test","path":"/spec/rules/2/name","value":"web-canary-canary-headers"},{"op":"remove","path":"/spec/rules/2"}`) {
		t.Errorf("removal does not test the rule's name: %s", patch)
	}
	done := apply(t, got, patch)
	if obs, _ := Observe(done, svcs); obs.CanaryWeight != 100 || obs.HeaderRule != -1 || len(done.Spec.Rules) != 2 {
		t.Errorf("after removal %+v, %d rules", obs, len(done.Spec.Rules))
	}
}

func TestPlanRefusedOnAConcurrentEdit(t *testing.T) {
	r := route(weighted(100, 0))
	patch, err := Plan(r, svcs, Desired{CanaryWeight: 10})
	if err != nil {
		t.Fatal(err)
	}
	edited := r.DeepCopy()
	edited.ResourceVersion = "8"
	doc, _ := json.Marshal(edited)
	p, _ := jsonpatch.DecodePatch(patch)
	if _, err := p.Apply(doc); err == nil {
		t.Fatal("a patch planned on resourceVersion 7 applied to resourceVersion 8")
	}
}

func TestObserve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		route   *gatewayv1.HTTPRoute
		weight  int32
		wantErr bool
	}{
		{"percent of the two weights", route(weighted(3, 1)), 25, false},
		{"default weights are 1 each", route(gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{backend("web-stable", nil), backend("web-canary", nil)}}), 50, false},
		{"both zero", route(weighted(0, 0)), 0, false},
		{"no rule with both Services", route(gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{backend("web-stable", nil)}}), 0, true},
		{"a Service of another namespace is not ours", route(gatewayv1.HTTPRouteRule{BackendRefs: []gatewayv1.HTTPBackendRef{
			backend("web-stable", nil), func() gatewayv1.HTTPBackendRef {
				b := backend("web-canary", nil)
				b.Namespace = ptr.To(gatewayv1.Namespace("other"))
				return b
			}()}}), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := Observe(tc.route, svcs)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if err == nil && obs.CanaryWeight != tc.weight {
				t.Errorf("weight %d, want %d", obs.CanaryWeight, tc.weight)
			}
		})
	}
}

func TestPlanRefusesBadInput(t *testing.T) {
	if _, err := Plan(route(weighted(100, 0)), svcs, Desired{CanaryWeight: 101}); err == nil {
		t.Error("weight 101 planned")
	}
	if _, err := Plan(route(), svcs, Desired{CanaryWeight: 1}); err == nil {
		t.Error("a route without the Services planned")
	}
}

func TestPlanReplacesChangedHeaders(t *testing.T) {
	r := route(weighted(90, 10))
	r = apply(t, r, must(Plan(r, svcs, Desired{CanaryWeight: 10, Matches: testerHeader})))
	other := []v1alpha1.CanaryHeaderMatch{{Name: "x-user", Type: v1alpha1.HeaderMatchRegularExpression, Value: "^qa-"}}
	patch := must(Plan(r, svcs, Desired{CanaryWeight: 10, Matches: other}))
	if !strings.Contains(string(patch), `"op":"replace","path":"/spec/rules/1"`) {
		t.Fatalf("patch %s does not replace the header rule", patch)
	}
	if obs, _ := Observe(apply(t, r, patch), svcs); !SameMatches(obs.Matches, other) {
		t.Errorf("header rule matches %+v, want %+v", obs.Matches, other)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
