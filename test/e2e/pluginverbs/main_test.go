// Package pluginverbs tests the plugin's mutating verbs end to end: the built kubectl-workload
// binary, run as a kubectl plugin (`kubectl workload …` with the binary on PATH), against the
// local control plane with the workload-agent (and kube-controller-manager for native
// workloads) doing the rollouts. It proves what fake clients cannot: that the API server
// accepts every patch the verbs send (JSON patch "test" ops included), that the preconditions
// hold under a real race, and that the workloads then move as the verbs intend: a whole Canary
// release followed by a background `status -w` from before it starts to its end, with a promote
// at each gate; a UnitedDeployment released zone by zone with set-partition and promote
// --subset; TApp instances killed and started again. kubectl is built from the tools module
// (hack/cluster/build-bins.sh kubectl) when the control plane's bin directory lacks it.
package pluginverbs

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.DefaultCRDDir()})
}
