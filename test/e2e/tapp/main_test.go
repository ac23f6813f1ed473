// Package tapp tests the TApp controller end to end: the workload-agent binary runs against the
// local control plane (real API server, scheduler and controller manager, kwok kubelets) and the
// tests drive TApps through the API as a user would.
package tapp

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.DefaultCRDDir()})
}
