// Package traffic tests Canary traffic routing through the Gateway API on the local control
// plane, with the standard-channel Gateway API CRDs installed: the route's weights and header
// rule at every step, abort at each step with a watcher that fails the test if a canary pod is
// removed while the route still sends it traffic, missing route and Services, and a route that
// someone else edits during a step. No gateway implementation runs: what is checked is what the
// agent writes to the HTTPRoute and when.
package traffic

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.RepoPath("config", "crd"), GatewayAPI: true})
}
