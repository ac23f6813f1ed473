package workload

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// canaryTrafficLines says where a Canary's traffic stands (nothing without spec.trafficRouting):
// the canary's weight on the HTTPRoute against the weight the step wants, the header route,
// and why routing is held when it is.
//
//	traffic: HTTPRoute web, canary weight 10% (desired 10%), header route x-canary: always
func canaryTrafficLines(c *v1alpha1.Canary) []string {
	tr := c.Spec.TrafficRouting
	if tr == nil {
		return nil
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionTrafficRoutingReady); cond != nil && cond.Status == metav1.ConditionFalse {
		return []string{fmt.Sprintf("traffic: HTTPRoute %s not ready (%s): %s", tr.GatewayAPI.HTTPRoute, cond.Reason, cond.Message)}
	}
	st := c.Status.TrafficRouting
	if st == nil {
		return []string{fmt.Sprintf("traffic: HTTPRoute %s, not set yet", tr.GatewayAPI.HTTPRoute)}
	}
	line := fmt.Sprintf("traffic: HTTPRoute %s, canary weight %d%% (desired %d%%)", tr.GatewayAPI.HTTPRoute, st.ActualWeight, st.DesiredWeight)
	if st.HeaderRoute {
		line += ", header route " + headerMatchesString(st.HeaderMatches)
	}
	return []string{line}
}

// headerMatchesString is "x-canary: always, x-user ~ ^qa-" (~ for a regular expression).
func headerMatchesString(ms []v1alpha1.CanaryHeaderMatch) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		sep := ": "
		if m.Type == v1alpha1.HeaderMatchRegularExpression {
			sep = " ~ "
		}
		parts[i] = m.Name + sep + m.Value
	}
	return strings.Join(parts, ", ")
}

// canaryTrafficNodes are the tree's lines for a Canary's traffic (none without routing).
func canaryTrafficNodes(c *v1alpha1.Canary) []*Node {
	var nodes []*Node
	for _, l := range canaryTrafficLines(c) {
		nodes = append(nodes, &Node{Name: "traffic", Info: strings.TrimPrefix(l, "traffic: ")})
	}
	return nodes
}
