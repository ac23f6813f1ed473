package undo

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/history/historytest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/set"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

func TestUndo(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		unchanged bool // succeeds without changing anything
	}{
		{"ud", []string{"ud/orders"}, false},
		{"ud-type-name-form", []string{"ud", "orders"}, false},
		{"ud-to-revision", []string{"ud/orders", "--to-revision=1"}, false},
		{"ud-to-current-revision", []string{"ud/orders", "--to-revision=3"}, true},
		{"statefulset", []string{"sts/db"}, false},
		{"daemonset", []string{"ds/agents"}, false},
		{"daemonset-to-current", []string{"ds/agents", "--to-revision=2"}, true},
		{"daemonset-dry-run-client", []string{"ds/agents", "--dry-run=client"}, true},
		{"daemonset-dry-run-server", []string{"ds/agents", "--to-revision", "1", "--dry-run=server"}, false},
		{"deployment", []string{"deploy/front"}, false},
		{"deployment-to-revision", []string{"deploy/front", "--to-revision", "1"}, false},
		{"tapp", []string{"tapp/web"}, false},
		{"tapp-to-revision-1", []string{"tapp/web", "--to-revision", "1"}, false},
		{"tapp-to-current", []string{"tapp/web", "--to-revision", "2"}, true},
		{"tapp-pool-template", []string{"tapp/pooled"}, false},
		{"dry-run-client", []string{"sts/db", "--dry-run=client"}, true},
		{"dry-run-server", []string{"ud/orders", "--dry-run=server"}, false},
		{"error-ud-unknown-revision", []string{"ud/orders", "--to-revision=7"}, false},
		{"error-ud-no-revisions", []string{"ud/fresh"}, false},
		{"error-tapp-no-revisions", []string{"tapp/plain"}, false},
		{"error-tapp-unknown-revision", []string{"tapp/web", "--to-revision", "3"}, false},
		{"error-deployment-paused", []string{"deploy/held"}, false},
		{"error-negative-revision", []string{"deploy/front", "--to-revision=-2"}, false},
		{"error-canary", []string{"canary/checkout"}, false},
		{"error-missing", []string{"ud/nope"}, false},
		{"error-no-args", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdUndo, historytest.Objects(), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			if res.Code != 0 || tt.unchanged {
				cmdtest.AssertUnchanged(t, res, historytest.Objects())
			}
		})
	}
}

func storedTemplate(t *testing.T, res cmdtest.Result, k workload.Kind, name string, path ...string) (corev1.PodTemplateSpec, map[string]string) {
	t.Helper()
	obj := res.Stored(t, k.Resource, name)
	tpl, err := workload.PodTemplateAt(obj, path)
	if err != nil {
		t.Fatal(err)
	}
	return *tpl, obj.GetAnnotations()
}

// The stored templates really go back, without the pod-template-hash label for a Deployment,
// and a TApp undone twice is back where it was.
func TestUndoStored(t *testing.T) {
	res := cmdtest.Run(t, NewCmdUndo, historytest.Objects(), "deploy/front")
	tpl, _ := storedTemplate(t, res, workload.Deployment, "front", "spec", "template")
	if got, want := mustJSON(t, tpl), mustJSON(t, historytest.PodTemplate("front", "nginx:1.25")); got != want {
		t.Errorf("deployment template %s, want %s", got, want)
	}

	res = cmdtest.Run(t, NewCmdUndo, historytest.Objects(), "ud/orders", "--to-revision=1")
	tpl, _ = storedTemplate(t, res, workload.UnitedDeployment, "orders", "spec", "template", "statefulSetTemplate", "spec", "template")
	if got, want := mustJSON(t, tpl), mustJSON(t, historytest.PodTemplate("orders", "orders:1")); got != want {
		t.Errorf("ud template %s, want %s", got, want)
	}

	res = cmdtest.Run(t, NewCmdUndo, historytest.Objects(), "ds/agents")
	tpl, _ = storedTemplate(t, res, workload.DaemonSet, "agents", "spec", "template")
	if got, want := mustJSON(t, tpl), mustJSON(t, historytest.PodTemplate("agents", "fluentd:1.16")); got != want {
		t.Errorf("daemonset template %s, want %s", got, want)
	}

	res = cmdtest.Run(t, NewCmdUndo, historytest.Objects(), "tapp/web")
	tpl, ann := storedTemplate(t, res, workload.TApp, "web", "spec", "template")
	if got, want := mustJSON(t, tpl), mustJSON(t, historytest.PodTemplate("web", "nginx:1.24")); got != want {
		t.Errorf("tapp template %s, want %s", got, want)
	}
	if got, want := mustJSON(t, ann), mustJSON(t, historytest.Find[*v1alpha1.TApp]("web").Annotations); got != want {
		t.Errorf("tapp annotations %s, want them untouched %s", got, want)
	}

	// A TApp's revision covers its templatePool: undo restores the entry set image changed.
	res = cmdtest.Run(t, NewCmdUndo, historytest.Objects(), "tapp/pooled")
	tpl, _ = storedTemplate(t, res, workload.TApp, "pooled", "spec", "templatePool", "blue")
	if got, want := mustJSON(t, tpl), mustJSON(t, historytest.PodTemplate("pooled", "nginx:2.0")); got != want {
		t.Errorf("tapp templatePool entry %s, want %s", got, want)
	}
}

func mustJSON(t *testing.T, v interface{}) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// set image, then undo, then undo again, through the real commands against one fake cluster in
// which the test records the revisions as the TApp controller would: the TApp goes to the new
// image, back to the old one, and forward again.
func TestSetImageThenUndoTwice(t *testing.T) {
	objs := historytest.Objects()
	image := func(res cmdtest.Result) string {
		t.Helper()
		tpl, _ := storedTemplate(t, res, workload.TApp, "web", "spec", "template")
		return tpl.Spec.Containers[0].Image
	}
	res := cmdtest.Run(t, set.NewCmdSet, objs, "image", "tapp/web", "app=nginx:1.26")
	if got := image(res); got != "nginx:1.26" {
		t.Fatalf("after set image: %s", got)
	}
	rev := func(hash string, number int64, image string) runtime.Object {
		return historytest.TAppRevision("web", "tapp-uid", hash, number, image, "")
	}
	// What the controller recorded: the new template as revision 3, then the template undo
	// restored renumbered as the newest.
	histories := [][]runtime.Object{
		{rev("aaa", 1, "nginx:1.24"), rev("bbb", 2, "nginx:1.25"), rev("ccc", 3, "nginx:1.26")},
		{rev("aaa", 1, "nginx:1.24"), rev("ccc", 3, "nginx:1.26"), rev("bbb", 4, "nginx:1.25")},
	}
	for i, want := range []string{"nginx:1.25", "nginx:1.26"} {
		stored, err := res.Client.Resource(workload.TApp.Resource).Namespace(cmdtest.Namespace).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The fake API server does not bump the generation; do it as the real one would.
		stored.SetGeneration(stored.GetGeneration() + 1)
		objs = append([]runtime.Object{stored}, histories[i]...)
		res = cmdtest.Run(t, NewCmdUndo, objs, "tapp/web")
		if got := image(res); got != want {
			t.Fatalf("after undo #%d: %s, want %s\n%s", i+1, got, want, res.Transcript())
		}
	}
}

// A paused Deployment that a Canary targets is held by it: undo writes the previous template,
// which the Canary releases through its steps (a paused Deployment is refused otherwise).
func TestUndoDeploymentTargetedByACanary(t *testing.T) {
	cn := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "shelf", Namespace: cmdtest.Namespace}}
	cn.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: "held"}
	objects := append(historytest.Objects(), runtime.Object(cn))
	undoHeld(t, objects, workload.Deployment, "held", "deployment-targeted-by-canary", "nginx:1.25")
}

// undoHeld runs undo on a workload a Canary targets, compares its transcript with the golden
// file, checks that the stored template runs image again and returns the stored annotations.
func undoHeld(t *testing.T, objects []runtime.Object, k workload.Kind, name, golden, image string) map[string]string {
	t.Helper()
	res := cmdtest.Run(t, NewCmdUndo, objects, k.Short+"/"+name)
	cmdtest.Golden(t, golden, res.Transcript())
	if res.Code != 0 {
		t.Fatalf("exit %d", res.Code)
	}
	tpl, ann := storedTemplate(t, res, k, name, "spec", "template")
	if got := tpl.Spec.Containers[0].Image; got != image {
		t.Errorf("template runs %s, want %s back", got, image)
	}
	return ann
}

// A DaemonSet a Canary holds (OnDelete, its partition annotation) is undone as a held
// StatefulSet is: the previous template is written, with no look-up of the Canaries, and the
// Canary releases it through its steps; the hold is left as it was.
func TestUndoDaemonSetHeldByACanary(t *testing.T) {
	cn := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: cmdtest.Namespace}}
	cn.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "DaemonSet", Name: "agents"}
	objects := []runtime.Object{cn}
	for _, o := range historytest.Objects() {
		if d, ok := o.(*appsv1.DaemonSet); ok {
			d.Annotations = map[string]string{v1alpha1.AnnotationDaemonSetPartition: "3"}
		}
		objects = append(objects, o)
	}
	ann := undoHeld(t, objects, workload.DaemonSet, "agents", "daemonset-held-by-canary", "fluentd:1.16")
	if got := ann[v1alpha1.AnnotationDaemonSetPartition]; got != "3" {
		t.Errorf("partition annotation %q, want the hold's 3 left alone", got)
	}
}
