package rbac

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
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
