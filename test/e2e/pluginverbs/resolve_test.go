package pluginverbs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// The built plugin names workloads as kubectl does, through the API server's discovery: a full
// resource name (tapps.apps.workload.dev/web), a file holding the workload beside a Service
// (-f examples/tapp.yaml) and a label selector (list -l app=web).
func TestKubectlNamesWorkloadsAsKubectlDoes(t *testing.T) {
	e := setup(t)
	root, err := agentproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(root, "examples", "tapp.yaml")
	e.createTAppFrom(example)
	web := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}}}
	web.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	web.Spec.Template = podTemplate(map[string]string{"app": "web"}, "nginx:1.27")
	if _, err := e.Apps.AppsV1alpha1().TApps(e.NS).Create(e.Ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	e.ok("tapp/web", "get", "tapps.apps.workload.dev/web")
	e.ok("tapp/web", "get", "TApp", "web")
	// No agent runs here: the status stays unreported, so status exits 3 (not done).
	r := e.plugin("status", "-f", example)
	if r.Code != 3 || !strings.HasPrefix(r.Out, "tapp/gameserver ") {
		t.Fatalf("status -f %s: exit %d, stdout %q, stderr %q; want exit 3 and tapp/gameserver", example, r.Code, r.Out, r.Err)
	}
	r = e.ok("web", "list", "-l", "app=web")
	if strings.Contains(r.Out, "gameserver") || !strings.Contains(r.Out, "TApp   web") {
		t.Fatalf("list -l app=web:\n%s\nwant web only", r.Out)
	}
	e.fails(`unknown workload type "services"`, workload.TApp, "web", "pause", "services/gameserver")
	e.fails(`unknown workload type "widgets.example.com"`, workload.TApp, "web", "pause", "widgets.example.com/web")
}

// createTAppFrom creates the TApp of a file of several objects.
func (e *env) createTAppFrom(path string) {
	e.T.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		e.T.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			e.T.Fatalf("%s holds no TApp", path)
		} else if err != nil {
			e.T.Fatal(err)
		}
		if obj.GetKind() != workload.TApp.Name {
			continue
		}
		if _, err := e.Dyn.Resource(workload.TApp.Resource).Namespace(e.NS).Create(e.Ctx, obj, metav1.CreateOptions{}); err != nil {
			e.T.Fatal(err)
		}
		return
	}
}
