// Package cluster checks the local control plane itself: that the real
// controllers, the scheduler and kwok's fake kubelets together behave like a
// cluster the project's controllers can be tested against.
package cluster

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{})
}
