package pluginverbs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
)

// tappManifest is a TApp as a person keeps it in Git and applies it with kubectl.
const tappManifest = `apiVersion: apps.workload.dev/v1alpha1
kind: TApp
metadata:
  name: hist
spec:
  replicas: 2
  selector:
    matchLabels: {app: hist}
  template:
    metadata:
      labels: {app: hist}
    spec:
      containers:
      - name: app
        image: %s
`

// A TApp changed with kubectl apply, not with the plugin, shows the change in history (the
// controller records every template as a ControllerRevision, whoever changed it), and undo
// brings the pods back to the template before it.
func TestTAppAppliedChangeInHistoryAndUndo(t *testing.T) {
	e := setup(t)
	e.startAgent("tapp")
	apply := func(image string) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "tapp.yaml")
		if err := os.WriteFile(file, fmt.Appendf(nil, tappManifest, image), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(e.Ctx, pluginexec.Kubectl(t), "apply", "-n", e.NS, "-f", file)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Cluster.Kubeconfig)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply (image %s): %v\n%s", image, err, out)
		}
	}
	podImages := func(want string) func() (bool, string) {
		return func() (bool, string) {
			pods, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: labels.Set{"app": "hist"}.String()})
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			ok := len(pods.Items) == 2
			for _, p := range pods.Items {
				img := p.Spec.Containers[0].Image
				seen = append(seen, p.Name+"="+img)
				ok = ok && img == want && p.DeletionTimestamp == nil
			}
			return ok, fmt.Sprintf("pods %v", seen)
		}
	}

	apply("nginx:1.27")
	e.Eventually("2 pods on nginx:1.27", podImages("nginx:1.27"))
	apply("nginx:1.28")
	e.Eventually("2 pods on nginx:1.28", podImages("nginx:1.28"))

	var hist result
	e.Eventually("history lists both templates", func() (bool, string) {
		hist = e.plugin("history", "tapp/hist")
		return hist.Code == 0 && strings.Contains(hist.Out, "app=nginx:1.27") && strings.Contains(hist.Out, "app=nginx:1.28"), hist.Out + hist.Err
	})
	// The newest revision is the current template.
	lines := strings.Split(strings.TrimSpace(hist.Out), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "app=nginx:1.28") {
		t.Fatalf("the newest revision is not the applied template:\n%s", hist.Out)
	}

	e.ok("tapp/hist", "undo", "tapp/hist")
	e.Eventually("2 pods back on nginx:1.27", podImages("nginx:1.27"))
	got, err := e.Apps.AppsV1alpha1().TApps(e.NS).Get(e.Ctx, "hist", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := got.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
		t.Fatalf("spec.template image after undo: %s, want nginx:1.27", img)
	}
}
