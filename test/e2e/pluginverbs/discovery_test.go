package pluginverbs

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl itself finds the built binary as the `workload` plugin: `kubectl plugin list` with
// only the plugin's directory on PATH lists it (and exits 0: no warning about it), and
// `kubectl workload` runs it, with kubectl's usage of the plugin's name in its help.
func TestKubectlFindsThePlugin(t *testing.T) {
	e := setup(t)
	dir := e.run.PluginDir
	cmd := exec.CommandContext(e.ctx, e.run.Kubectl, "plugin", "list")
	cmd.Env = []string{"PATH=" + dir, "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	t.Logf("$ PATH=%s kubectl plugin list\n%s", dir, out)
	if err != nil || !strings.Contains(string(out), filepath.Join(dir, "kubectl-workload")) {
		t.Fatalf("kubectl plugin list: %v; want %s listed", err, filepath.Join(dir, "kubectl-workload"))
	}
	e.ok("kubectl-workload ", "version")
	r := e.ok("kubectl workload status TYPE/NAME", "status", "--help")
	if !strings.Contains(r.Out, "kubectl workload status canary/checkout -w --timeout=10m --success-on-pause") {
		t.Fatalf("status --help lacks its examples:\n%s", r.Out)
	}
}
