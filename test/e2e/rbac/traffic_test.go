package rbac

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// canaryTrafficScenario releases examples/canary-traffic.yaml: the agent lists and watches the
// HTTPRoute, gets both Services and patches the route's weights and header rule.
func (e *env) canaryTrafficScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-traffic")
	te := &e2eenv.Env{T: t, Ctx: e.ctx, Cluster: e.cluster, Kube: e.kube, Apps: e.apps, Dyn: e.dyn, NS: ns}
	te.CreateManifests(localcluster.RepoPath("examples", "canary-traffic.yaml"))
	gw, err := gatewayclient.NewForConfig(e.cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	svcs := traffic.Services{Stable: "web-stable", Canary: "web-canary"}
	routeIs := func(weight int32, header bool) {
		t.Helper()
		waitFor(t, e.ctx, fmt.Sprintf("HTTPRoute web at canary weight %d, header route %v", weight, header), func(ctx context.Context) (bool, string) {
			r, err := gw.GatewayV1().HTTPRoutes(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			obs, err := traffic.Observe(r, svcs)
			return err == nil && obs.CanaryWeight == weight && (obs.HeaderRule >= 0) == header, fmt.Sprintf("%+v %v", obs, err)
		})
	}
	e.waitRollout(t, workload.Canary, ns, "web", workload.StatePaused)
	routeIs(10, true)
	c, err := e.apps.AppsV1alpha1().Canaries(ns).Get(e.ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.patch(t, workload.Canary, ns, "web", types.MergePatchType, fmt.Sprintf(`{"spec":{"approvedBatch":%d}}`, workload.WaitingBatch(c)))
	e.waitRollout(t, workload.Canary, ns, "web", workload.StateComplete)
	routeIs(100, false)
}
