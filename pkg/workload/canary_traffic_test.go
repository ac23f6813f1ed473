package workload

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestCanaryTrafficLines(t *testing.T) {
	routed := func(st *v1alpha1.CanaryTrafficStatus, conds ...metav1.Condition) *v1alpha1.Canary {
		c := &v1alpha1.Canary{}
		c.Spec.TrafficRouting = &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{HTTPRoute: "web"}}
		c.Status.TrafficRouting, c.Status.Conditions = st, conds
		return c
	}
	for _, tc := range []struct {
		name   string
		canary *v1alpha1.Canary
		want   []string
	}{
		{"no routing", &v1alpha1.Canary{}, nil},
		{"not set yet", routed(nil), []string{"traffic: HTTPRoute web, not set yet"}},
		{"weights and header route", routed(&v1alpha1.CanaryTrafficStatus{DesiredWeight: 20, ActualWeight: 10, HeaderRoute: true,
			HeaderMatches: []v1alpha1.CanaryHeaderMatch{{Name: "x-canary", Value: "always"}, {Name: "x-user", Type: v1alpha1.HeaderMatchRegularExpression, Value: "^qa-"}}}),
			[]string{"traffic: HTTPRoute web, canary weight 10% (desired 20%), header route x-canary: always, x-user ~ ^qa-"}},
		{"held", routed(&v1alpha1.CanaryTrafficStatus{}, metav1.Condition{Type: v1alpha1.ConditionTrafficRoutingReady, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonServiceNotFound, Message: `canary Service "web-canary" not found`}),
			[]string{`traffic: HTTPRoute web not ready (ServiceNotFound): canary Service "web-canary" not found`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := canaryTrafficLines(tc.canary); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if n := canaryTrafficNodes(routed(&v1alpha1.CanaryTrafficStatus{ActualWeight: 50, DesiredWeight: 50})); len(n) != 1 || n[0].Name != "traffic" || n[0].Info != "HTTPRoute web, canary weight 50% (desired 50%)" {
		t.Errorf("tree nodes %+v", n)
	}
}
