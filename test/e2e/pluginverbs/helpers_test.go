package pluginverbs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
)

type env struct {
	*e2eenv.Env
	// run runs `kubectl workload -n NS …` through kubectl, the built plugin on PATH.
	run *pluginexec.Runner
}

// setup creates a namespace (deleted after the test, which fails if the namespace does not go),
// clients, and finds kubectl and the plugin.
func setup(t *testing.T) *env {
	t.Helper()
	e := &env{Env: e2eenv.Setup(t)}
	e.WaitNamespaceGone = true
	e.run = pluginexec.New(t, e.Ctx, e.Cluster.Kubeconfig, e.NS)
	return e
}

// startAgent runs a workload-agent with the given controllers, scoped to the test's namespace.
func (e *env) startAgent(controllers string) {
	e.T.Helper()
	e.StartAgentLoggingErrors(controllers)
}

// result is what one `kubectl workload …` printed and how it exited.
type result = pluginexec.Result

// plugin runs `kubectl workload -n NS ARGS` as a person would.
func (e *env) plugin(args ...string) result {
	e.T.Helper()
	return e.run.Run(args...)
}

// ok runs a verb that must succeed and print want (a substring of its one line).
func (e *env) ok(want string, args ...string) result {
	e.T.Helper()
	r := e.plugin(args...)
	if r.Code != 0 || !strings.Contains(r.Out, want) {
		e.T.Fatalf("kubectl workload %v: exit %d, stdout %q, stderr %q; want exit 0 and %q", args, r.Code, r.Out, r.Err, want)
	}
	return r
}

// fails runs a verb that must be refused with one line containing want, and checks that the
// object's spec and metadata did not change.
func (e *env) fails(want string, k workload.Kind, name string, args ...string) {
	e.T.Helper()
	before := e.get(k, name)
	r := e.plugin(args...)
	if r.Code == 0 || !strings.Contains(r.Err, want) || strings.Count(strings.TrimSpace(r.Err), "\n") > 0 {
		e.T.Fatalf("kubectl workload %v: exit %d, stderr %q; want a non-zero exit and one line with %q", args, r.Code, r.Err, want)
	}
	after := e.get(k, name)
	if before.GetGeneration() != after.GetGeneration() || !equalJSON(before.Object["spec"], after.Object["spec"]) ||
		!equalJSON(before.GetAnnotations(), after.GetAnnotations()) {
		e.T.Fatalf("kubectl workload %v changed %s/%s although it was refused", args, k.Short, name)
	}
}

func (e *env) get(k workload.Kind, name string) *unstructured.Unstructured {
	e.T.Helper()
	obj, err := e.Dyn.Resource(k.Resource).Namespace(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return obj
}

func podTemplate(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "main", Image: image}},
		},
	}
}

// image reads the image of the first container of the pod template at path.
func image(obj *unstructured.Unstructured, path ...string) string {
	containers, _, _ := unstructured.NestedSlice(obj.Object, append(path, "spec", "containers")...)
	if len(containers) == 0 {
		return ""
	}
	img, _, _ := unstructured.NestedString(containers[0].(map[string]interface{}), "image")
	return img
}

func equalJSON(a, b interface{}) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
