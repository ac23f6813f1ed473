package pluginverbs

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// safety bounds every wait so that a broken controller fails the test instead of hanging it.
const safety = 3 * time.Minute

type env struct {
	t    *testing.T
	ctx  context.Context
	kube *kubernetes.Clientset
	apps versioned.Interface
	dyn  dynamic.Interface
	ns   string
	// run runs `kubectl workload -n NS …` through kubectl, the built plugin on PATH.
	run *pluginexec.Runner
}

// setup creates a namespace (deleted after the test), clients, and finds kubectl and the plugin.
func setup(t *testing.T) *env {
	t.Helper()
	c := localcluster.Shared(t)
	kube, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	apps, err := versioned.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	ns, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The agent has been stopped by now (its cleanup runs first): remove the finalizer it
		// put on every Canary (the escape hatch pkg/controller/canary documents), or the
		// Canaries, and so the namespace, would stay Terminating for ever.
		list, err := apps.AppsV1alpha1().Canaries(ns.Name).List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, c := range list.Items {
				if len(c.Finalizers) > 0 {
					_, _ = apps.AppsV1alpha1().Canaries(ns.Name).Patch(context.Background(), c.Name, types.JSONPatchType,
						[]byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
				}
			}
		}
		if err := kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
			return
		}
		if err != nil || len(list.Items) == 0 {
			return
		}
		// A namespace that held Canaries must go, finalizers and all (about 5 s: the namespace
		// controller's pace).
		start := time.Now()
		err = wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, safety, true, func(ctx context.Context) (bool, error) {
			_, err := kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			got, _ := kube.CoreV1().Namespaces().Get(context.Background(), ns.Name, metav1.GetOptions{})
			t.Errorf("namespace %s still exists %v after its deletion: %+v", ns.Name, safety, got.Status)
			return
		}
		t.Logf("namespace %s deleted in %v", ns.Name, time.Since(start).Round(time.Millisecond))
	})
	return &env{t: t, ctx: t.Context(), kube: kube, apps: apps, dyn: dyn, ns: ns.Name,
		run: pluginexec.New(t, t.Context(), c.Kubeconfig, ns.Name)}
}

// klogError matches klog's error lines ("E1121 06:51:23.123456 …").
var klogError = regexp.MustCompile(`(?m)^E\d{4} .*$`)

// startAgent runs a workload-agent with the given controllers, scoped to the test's namespace.
func (e *env) startAgent(controllers string) {
	e.t.Helper()
	args := []string{"--namespace=" + e.ns, "--controllers=" + controllers, "--leader-elect=false"}
	a := agentproc.Start(e.t, agentproc.Options{Kubeconfig: localcluster.Shared(e.t).Kubeconfig, Args: args})
	ctx, cancel := context.WithTimeout(e.ctx, safety)
	defer cancel()
	if err := a.WaitReady(ctx); err != nil {
		e.t.Fatalf("agent not ready: %v\n%s", err, a.LogTail(8<<10))
	}
	e.t.Cleanup(func() {
		for _, line := range klogError.FindAllString(a.Log(), 20) {
			e.t.Logf("agent logged an error: %s", line)
		}
	})
}

// result is what one `kubectl workload …` printed and how it exited.
type result = pluginexec.Result

// plugin runs `kubectl workload -n NS ARGS` as a person would.
func (e *env) plugin(args ...string) result {
	e.t.Helper()
	return e.run.Run(args...)
}

// ok runs a verb that must succeed and print want (a substring of its one line).
func (e *env) ok(want string, args ...string) result {
	e.t.Helper()
	r := e.plugin(args...)
	if r.Code != 0 || !strings.Contains(r.Out, want) {
		e.t.Fatalf("kubectl workload %v: exit %d, stdout %q, stderr %q; want exit 0 and %q", args, r.Code, r.Out, r.Err, want)
	}
	return r
}

// fails runs a verb that must be refused with one line containing want, and checks that the
// object's spec and metadata did not change.
func (e *env) fails(want string, k workload.Kind, name string, args ...string) {
	e.t.Helper()
	before := e.get(k, name)
	r := e.plugin(args...)
	if r.Code == 0 || !strings.Contains(r.Err, want) || strings.Count(strings.TrimSpace(r.Err), "\n") > 0 {
		e.t.Fatalf("kubectl workload %v: exit %d, stderr %q; want a non-zero exit and one line with %q", args, r.Code, r.Err, want)
	}
	after := e.get(k, name)
	if before.GetGeneration() != after.GetGeneration() || !equalJSON(before.Object["spec"], after.Object["spec"]) ||
		!equalJSON(before.GetAnnotations(), after.GetAnnotations()) {
		e.t.Fatalf("kubectl workload %v changed %s/%s although it was refused", args, k.Short, name)
	}
}

func (e *env) get(k workload.Kind, name string) *unstructured.Unstructured {
	e.t.Helper()
	obj, err := e.dyn.Resource(k.Resource).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return obj
}

// eventually polls cond until it holds, failing the test after safety with what describes the
// last state.
func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, safety, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v; last state: %s", what, err, last)
	}
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
