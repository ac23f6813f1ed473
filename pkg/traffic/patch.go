package traffic

import (
	"encoding/json"
	"fmt"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Op is one JSON patch (RFC 6902) operation.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Plan returns the JSON patch that gives route the desired weights and header rule, nil when it
// carries them already. Its first operation tests metadata.resourceVersion: the API server
// applies the patch only to the route as it was read.
func Plan(route *gatewayv1.HTTPRoute, s Services, want Desired) ([]byte, error) {
	if want.CanaryWeight < 0 || want.CanaryWeight > 100 {
		return nil, fmt.Errorf("canary weight %d is not within 0–100", want.CanaryWeight)
	}
	obs, err := Observe(route, s)
	if err != nil {
		return nil, err
	}
	ops := weightOps(route, s, want.CanaryWeight)
	ops = append(ops, headerOps(route, s, obs, want.Matches)...)
	if len(ops) == 0 {
		return nil, nil
	}
	ops = append([]Op{{Op: "test", Path: "/metadata/resourceVersion", Value: route.ResourceVersion}}, ops...)
	return json.Marshal(ops)
}

// weightOps sets, in every rule sending to both Services, the canary's weight to w and the
// stable's to 100 − w.
func weightOps(route *gatewayv1.HTTPRoute, s Services, w int32) []Op {
	var ops []Op
	for i := range route.Spec.Rules {
		rule := &route.Spec.Rules[i]
		st, cn := weightedRule(rule, route.Namespace, s)
		if st < 0 {
			continue
		}
		for _, ref := range []struct {
			index  int
			weight int32
		}{{st, 100 - w}, {cn, w}} {
			if rule.BackendRefs[ref.index].Weight == nil || *rule.BackendRefs[ref.index].Weight != ref.weight {
				ops = append(ops, Op{Op: "add", Path: fmt.Sprintf("/spec/rules/%d/backendRefs/%d/weight", i, ref.index), Value: ref.weight})
			}
		}
	}
	return ops
}

// headerOps adds, replaces or removes the header rule. A removal tests the rule's name first,
// so that it can only remove the agent's own rule.
func headerOps(route *gatewayv1.HTTPRoute, s Services, obs Observed, want []v1alpha1.CanaryHeaderMatch) []Op {
	switch {
	case len(want) == 0 && obs.HeaderRule < 0:
		return nil
	case len(want) == 0:
		path := fmt.Sprintf("/spec/rules/%d", obs.HeaderRule)
		return []Op{{Op: "test", Path: path + "/name", Value: HeaderRuleName(s)}, {Op: "remove", Path: path}}
	case obs.HeaderRule < 0:
		return []Op{{Op: "add", Path: "/spec/rules/-", Value: HeaderRule(route, s, want)}}
	case !SameMatches(obs.Matches, want):
		return []Op{{Op: "replace", Path: fmt.Sprintf("/spec/rules/%d", obs.HeaderRule), Value: HeaderRule(route, s, want)}}
	}
	return nil
}

// HeaderRule is the rule that sends requests carrying the headers to the canary only: every
// match of the first rule sending to both Services (its paths, methods, queries), each with the
// headers added, so that the header route never reaches beyond what that rule serves.
func HeaderRule(route *gatewayv1.HTTPRoute, s Services, headers []v1alpha1.CanaryHeaderMatch) gatewayv1.HTTPRouteRule {
	name := gatewayv1.SectionName(HeaderRuleName(s))
	rule := gatewayv1.HTTPRouteRule{Name: &name}
	for i := range route.Spec.Rules {
		base := &route.Spec.Rules[i]
		st, cn := weightedRule(base, route.Namespace, s)
		if st < 0 || (base.Name != nil && *base.Name == name) {
			continue
		}
		matches := base.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.HTTPRouteMatch{{}}
		}
		for _, m := range matches {
			m = *m.DeepCopy()
			m.Headers = append(m.Headers, gatewayHeaders(headers)...)
			rule.Matches = append(rule.Matches, m)
		}
		ref := *base.BackendRefs[cn].DeepCopy()
		ref.Weight = nil
		rule.BackendRefs = []gatewayv1.HTTPBackendRef{ref}
		break
	}
	return rule
}

func gatewayHeaders(headers []v1alpha1.CanaryHeaderMatch) []gatewayv1.HTTPHeaderMatch {
	out := make([]gatewayv1.HTTPHeaderMatch, len(headers))
	for i, h := range headers {
		t := gatewayv1.HeaderMatchType(matchType(h))
		out[i] = gatewayv1.HTTPHeaderMatch{Type: &t, Name: gatewayv1.HTTPHeaderName(h.Name), Value: h.Value}
	}
	return out
}
