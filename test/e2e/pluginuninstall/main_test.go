// Package pluginuninstall tests `kubectl workload install` and `uninstall --force` end to end,
// on a local control plane of its own (uninstall deletes the CRDs cluster-wide, which no other
// package's tests could share): the built plugin run through kubectl, a real workload-agent
// process, and kube-controller-manager's garbage collector.
package pluginuninstall

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// TestMain starts the cluster without our CRDs: the test installs them with the plugin.
func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{})
}
