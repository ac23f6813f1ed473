package rbac

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// canaryBlueGreenScenario starts examples/canary-bluegreen.yaml: the agent gets both Services,
// labels the stable pod template (a Deployment patch) and patches the selectors of the Services
// before the preview comes up.
func (e *env) canaryBlueGreenScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-bluegreen")
	te := &e2eenv.Env{T: t, Ctx: e.ctx, Cluster: e.cluster, Kube: e.kube, Apps: e.apps, Dyn: e.dyn, NS: ns}
	te.CreateManifests(localcluster.RepoPath("examples", "canary-bluegreen.yaml"))
	e.waitEvent(t, ns, "shop", v1alpha1.EventServiceSwitched)
	e.waitEvent(t, ns, "shop", v1alpha1.EventCanaryCreated)
}

// canaryBlueGreenTargetScenario releases examples/canary-bluegreen-deployment-target.yaml
// through the hand-over: the agent pauses Deployment cart and pins both Services to its pods,
// creates the temporary Deployment behind the preview Service at `kubectl set image`, switches
// the active Service on promote, scales cart down and back up on the new template, moves both
// Services to it and deletes the temporary Deployment. No verb beyond the Deployment target's
// and the pair blue-green's.
func (e *env) canaryBlueGreenTargetScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-bluegreen-target")
	te := &e2eenv.Env{T: t, Ctx: e.ctx, Cluster: e.cluster, Kube: e.kube, Apps: e.apps, Dyn: e.dyn, NS: ns}
	te.CreateManifests(localcluster.RepoPath("examples", "canary-bluegreen-deployment-target.yaml"))
	e.waitEvent(t, ns, "cart", v1alpha1.EventServiceSwitched) // pinned at the hold
	waitFor(t, e.ctx, "deploy/cart paused", func(ctx context.Context) (bool, string) {
		d, err := e.kube.AppsV1().Deployments(ns).Get(ctx, "cart", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Spec.Paused, fmt.Sprintf("paused %t", d.Spec.Paused)
	})
	e.patch(t, workload.Canary, ns, "cart", types.MergePatchType, `{"spec":{"blueGreen":{"scaleDownDelaySeconds":0}}}`)
	e.patch(t, workload.Deployment, ns, "cart", types.JSONPatchType,
		`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]`)
	e.waitRollout(t, workload.Canary, ns, "cart", workload.StatePaused) // the preview waits for a promote
	e.patch(t, workload.Canary, ns, "cart", types.MergePatchType, `{"spec":{"approvedBatch":1}}`)
	e.waitEvent(t, ns, "cart", v1alpha1.EventCanaryDeleted)
	e.waitRollout(t, workload.Canary, ns, "cart", workload.StateComplete)
}

// canaryBlueGreenRouteScenario starts examples/canary-bluegreen-gateway.yaml up to the switch:
// the agent reads the route and both Services, pins the route at 0 and switches it to 100 on
// promote, without writing any Service.
func (e *env) canaryBlueGreenRouteScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-bluegreen-route")
	te := &e2eenv.Env{T: t, Ctx: e.ctx, Cluster: e.cluster, Kube: e.kube, Apps: e.apps, Dyn: e.dyn, NS: ns}
	te.CreateManifests(localcluster.RepoPath("examples", "canary-bluegreen-gateway.yaml"))
	gw, err := gatewayclient.NewForConfig(e.cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.Canary, ns, "shop", workload.StatePaused)
	e.patch(t, workload.Canary, ns, "shop", types.MergePatchType, `{"spec":{"approvedBatch":1}}`)
	waitFor(t, e.ctx, "HTTPRoute shop at canary weight 100", func(ctx context.Context) (bool, string) {
		r, err := gw.GatewayV1().HTTPRoutes(ns).Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		obs, err := traffic.Observe(r, traffic.Services{Stable: "shop-blue", Canary: "shop-green"})
		return err == nil && obs.CanaryWeight == 100, fmt.Sprintf("%+v %v", obs, err)
	})
}
