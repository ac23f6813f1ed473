package pluginverbs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// kubectl itself finds the built binary as the `workload` plugin: `kubectl plugin list` with
// only the plugin's directory on PATH lists it (and exits 0: no warning about it), and
// `kubectl workload` runs it, with kubectl's usage of the plugin's name in its help.
func TestKubectlFindsThePlugin(t *testing.T) {
	e := setup(t)
	dir := e.run.PluginDir
	cmd := exec.CommandContext(e.Ctx, e.run.Kubectl, "plugin", "list")
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

// `kubectl workload <TAB>` completes through kubectl's plugin completion (the
// kubectl_complete-workload script of the release archives on PATH): a mutating verb completes
// the kinds it works on, then the names of that kind in the namespace.
func TestKubectlCompletesTheMutatingVerbs(t *testing.T) {
	e := setup(t)
	root, err := agentproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "hack", "kubectl_complete-workload"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-workload"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web", "worker"} {
		tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: name}}
		tapp.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
		tapp.Spec.Template = podTemplate(map[string]string{"app": name}, "nginx:1.27")
		if _, err := e.Apps.AppsV1alpha1().TApps(e.NS).Create(e.Ctx, tapp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	complete := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(e.Ctx, e.run.Kubectl, append([]string{"__complete", "workload", "-n", e.NS}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+e.run.PluginDir+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+e.run.Kubeconfig)
		out, err := cmd.Output()
		t.Logf("$ kubectl __complete workload -n %s %s\n%s", e.NS, strings.Join(args, " "), out)
		if err != nil {
			t.Fatalf("kubectl __complete workload %v: %v", args, err)
		}
		return string(out)
	}
	if got := complete("promote", ""); !strings.HasPrefix(got, "canary/\nud/\n:") {
		t.Errorf("promote completes %q, want canary/ and ud/", got)
	}
	if got := complete("kill-instance", "tapp/w"); !strings.HasPrefix(got, "tapp/web\ntapp/worker\n:") {
		t.Errorf("kill-instance tapp/w completes %q, want tapp/web and tapp/worker", got)
	}
	if got := complete("abort", "tapp/"); !strings.HasPrefix(got, ":") {
		t.Errorf("abort tapp/ completes %q, want nothing (abort works on canaries only)", got)
	}
}
