// Package pluginverbs tests the plugin's mutating verbs end to end: the built kubectl-workload
// binary, run as a kubectl plugin (`kubectl workload …` with the binary on PATH), against the
// local control plane with the workload-agent (and kube-controller-manager for native
// workloads) doing the rollouts. It proves what fake clients cannot: that the API server
// accepts every patch the verbs send (JSON patch "test" ops included), that the preconditions
// hold under a real race, and that the workloads then move as the verbs intend.
package pluginverbs

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.DefaultCRDDir()})
}
