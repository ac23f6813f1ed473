// Package dashboard drives `kubectl workload dashboard` in a real browser: headless Chromium
// (Debian's chromium, which `make chromium` installs when missing) through chromedp, against the
// local control plane with the agent's canary controller. The dashboard runs in the test
// process through the plugin's real command tree, with the cluster's kubeconfig (or, for the
// RBAC case, impersonating a ServiceAccount that may read but not patch Canaries). With
// $DASHBOARD_SCREENSHOTS set it writes the screenshots of docs/dashboard.md to docs/images/.
package dashboard

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.RepoPath("config", "crd")})
}
