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
	e.waitPaused(t, ns, "cart")
	e.releaseCartPromoted(t, ns)
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
	e.waitRollout(t, workload.Canary, ns, "shop", workload.StatePaused)
	e.patch(t, workload.Canary, ns, "shop", types.MergePatchType, `{"spec":{"approvedBatch":1}}`)
	e.waitWeight(t, ns, "shop", traffic.Services{Stable: "shop-blue", Canary: "shop-green"}, 100)
}

// canaryBlueGreenTargetRouteScenario releases examples/canary-bluegreen-deployment-target-gateway.yaml
// through the hand-over: the agent pauses Deployment cart, creates the temporary Deployment
// whose pods take cart-green's labels at `kubectl set image`, runs the post-promotion check,
// switches the route to 100 on promote, scales cart down and back up on the new template,
// moves the route back to 0 and deletes the temporary Deployment, without writing any Service.
func (e *env) canaryBlueGreenTargetRouteScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-bluegreen-target-route")
	te := &e2eenv.Env{T: t, Ctx: e.ctx, Cluster: e.cluster, Kube: e.kube, Apps: e.apps, Dyn: e.dyn, NS: ns}
	te.CreateManifests(localcluster.RepoPath("examples", "canary-bluegreen-deployment-target-gateway.yaml"))
	cart := traffic.Services{Stable: "cart-blue", Canary: "cart-green"}
	e.waitPaused(t, ns, "cart")
	e.releaseCartPromoted(t, ns)
	e.waitWeight(t, ns, "cart", cart, 100)
	e.waitEvent(t, ns, "cart", v1alpha1.EventCanaryDeleted)
	e.waitRollout(t, workload.Canary, ns, "cart", workload.StateComplete)
	e.waitWeight(t, ns, "cart", cart, 0)
}

// waitPaused waits until the agent holds Deployment name paused.
func (e *env) waitPaused(t *testing.T, ns, name string) {
	t.Helper()
	waitFor(t, e.ctx, "deploy/"+name+" paused", func(ctx context.Context) (bool, string) {
		d, err := e.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Spec.Paused, fmt.Sprintf("paused %t", d.Spec.Paused)
	})
}

// waitWeight waits until HTTPRoute route gives services.Canary weight want.
func (e *env) waitWeight(t *testing.T, ns, route string, services traffic.Services, want int32) {
	t.Helper()
	gw, err := gatewayclient.NewForConfig(e.cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, e.ctx, fmt.Sprintf("HTTPRoute %s at canary weight %d", route, want), func(ctx context.Context) (bool, string) {
		r, err := gw.GatewayV1().HTTPRoutes(ns).Get(ctx, route, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		obs, err := traffic.Observe(r, services)
		return err == nil && obs.CanaryWeight == want, fmt.Sprintf("%+v %v", obs, err)
	})
}

// releaseCartPromoted releases nginx 1.27 on Deployment cart of a blue-green Canary cart with no
// scale-down delay, and promotes the preview once it waits for it.
func (e *env) releaseCartPromoted(t *testing.T, ns string) {
	t.Helper()
	e.patch(t, workload.Canary, ns, "cart", types.MergePatchType, `{"spec":{"blueGreen":{"scaleDownDelaySeconds":0}}}`)
	e.patch(t, workload.Deployment, ns, "cart", types.JSONPatchType,
		`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]`)
	e.waitRollout(t, workload.Canary, ns, "cart", workload.StatePaused) // the preview waits for a promote
	e.patch(t, workload.Canary, ns, "cart", types.MergePatchType, `{"spec":{"approvedBatch":1}}`)
}
