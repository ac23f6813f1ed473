// Package uniteddeployment tests the UnitedDeployment controller end to end: the workload-agent
// binary (UnitedDeployment and TApp controllers) runs against the local control plane, whose
// kube-controller-manager runs the StatefulSets and Deployments of the subsets and whose kwok
// nodes spread over zone-a, zone-b and zone-c run the pods. The tests drive UnitedDeployments
// through the API as a user would, while a watcher checks that no subset ever runs more pods than
// it is allocated plus what its kind may surge.
package uniteddeployment

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.DefaultCRDDir()})
}
