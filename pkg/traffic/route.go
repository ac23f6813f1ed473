package traffic

import (
	"fmt"
	"slices"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Services are the two Services a route sends to.
type Services struct{ Stable, Canary string }

// Desired is what the route must carry: the canary's weight (the stable Service gets the rest of
// 100) and, when Matches is not empty, the header rule.
type Desired struct {
	CanaryWeight int32
	Matches      []v1alpha1.CanaryHeaderMatch
}

// Observed is what a route carries.
type Observed struct {
	// CanaryWeight is the canary's weight in the first rule sending to both Services.
	CanaryWeight int32
	// HeaderRule is the index of the header rule in spec.rules, -1 when there is none.
	HeaderRule int
	// Matches are the header rule's headers.
	Matches []v1alpha1.CanaryHeaderMatch
}

// HeaderRuleName names the rule the agent adds for header matches: one per canary Service, so
// the agent finds its own rule again and never touches another.
func HeaderRuleName(s Services) string { return s.Canary + "-canary-headers" }

// refersTo reports whether a backendRef of a route in namespace ns is the Service name.
func refersTo(ref gatewayv1.BackendObjectReference, ns, name string) bool {
	return string(ref.Name) == name &&
		(ref.Group == nil || *ref.Group == "") &&
		(ref.Kind == nil || *ref.Kind == "Service") &&
		(ref.Namespace == nil || string(*ref.Namespace) == ns)
}

// weightedRule returns the indexes of the stable and the canary backendRef of rule, or -1, -1
// when it does not send to both.
func weightedRule(rule *gatewayv1.HTTPRouteRule, ns string, s Services) (stable, canary int) {
	stable, canary = -1, -1
	for i, ref := range rule.BackendRefs {
		switch {
		case refersTo(ref.BackendObjectReference, ns, s.Stable):
			stable = i
		case refersTo(ref.BackendObjectReference, ns, s.Canary):
			canary = i
		}
	}
	if stable < 0 || canary < 0 {
		return -1, -1
	}
	return stable, canary
}

// weightOf is a backendRef's weight; the Gateway API's default is 1.
func weightOf(ref gatewayv1.HTTPBackendRef) int32 {
	if ref.Weight == nil {
		return 1
	}
	return *ref.Weight
}

// Observe reads a route: the canary's share of the first rule that sends to both Services, in
// percent, and the agent's header rule. It fails when no rule sends to both: the route is the
// user's to set up, and the agent does not guess where the canary belongs.
func Observe(route *gatewayv1.HTTPRoute, s Services) (Observed, error) {
	obs := Observed{HeaderRule: -1, CanaryWeight: -1}
	for i := range route.Spec.Rules {
		rule := &route.Spec.Rules[i]
		if rule.Name != nil && string(*rule.Name) == HeaderRuleName(s) {
			obs.HeaderRule, obs.Matches = i, headersOf(rule)
			continue
		}
		st, cn := weightedRule(rule, route.Namespace, s)
		if st < 0 || obs.CanaryWeight >= 0 {
			continue
		}
		ws, wc := weightOf(rule.BackendRefs[st]), weightOf(rule.BackendRefs[cn])
		obs.CanaryWeight = 0
		if ws+wc > 0 {
			obs.CanaryWeight = (100*wc + (ws+wc)/2) / (ws + wc)
		}
	}
	if obs.CanaryWeight < 0 {
		return obs, fmt.Errorf("HTTPRoute %q has no rule whose backendRefs name both Service %q and Service %q: add the canary Service with weight 0 next to the stable one",
			route.Name, s.Stable, s.Canary)
	}
	return obs, nil
}

// headersOf returns the header matches of the agent's header rule (those of its first match:
// every match of the rule carries the same headers).
func headersOf(rule *gatewayv1.HTTPRouteRule) []v1alpha1.CanaryHeaderMatch {
	if len(rule.Matches) == 0 {
		return nil
	}
	var out []v1alpha1.CanaryHeaderMatch
	for _, h := range rule.Matches[0].Headers {
		t := v1alpha1.HeaderMatchExact
		if h.Type != nil {
			t = v1alpha1.HeaderMatchType(*h.Type)
		}
		out = append(out, v1alpha1.CanaryHeaderMatch{Type: t, Name: string(h.Name), Value: h.Value})
	}
	return out
}

// SameMatches reports whether two header lists match the same requests (types defaulted).
func SameMatches(a, b []v1alpha1.CanaryHeaderMatch) bool {
	return slices.EqualFunc(a, b, func(x, y v1alpha1.CanaryHeaderMatch) bool {
		return x.Name == y.Name && x.Value == y.Value && matchType(x) == matchType(y)
	})
}

func matchType(m v1alpha1.CanaryHeaderMatch) v1alpha1.HeaderMatchType {
	if m.Type == "" {
		return v1alpha1.HeaderMatchExact
	}
	return m.Type
}
