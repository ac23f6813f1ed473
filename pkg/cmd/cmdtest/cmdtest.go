// Package cmdtest runs plugin commands in tests the way a person runs them: through the real
// cobra command, against a fake cluster holding the given objects, capturing what the command
// printed, the one-line error it exited with, and every API action it sent. Tests compare that
// transcript with a golden file (testdata/<name>.golden; `go test ./pkg/cmd/... -update`
// rewrites them).
//
// The fake cluster is two fake clients seeded with the same objects: a dynamic client (every
// object; what kubectl's test factory hands out as f.DynamicClient()) and a typed clientset (the
// native objects; what workload.KubeClient(f) returns, through Factory.KubeClient). A command
// may use either or both; the transcript lists their actions in the order they were sent.
package cmdtest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	fakekube "k8s.io/client-go/kubernetes/fake"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	cmdtesting "k8s.io/kubectl/pkg/cmd/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Namespace is the namespace commands run in.
const Namespace = "test"

// NewCmd is a verb's constructor.
type NewCmd func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command

// Result is what one run of a command did.
type Result struct {
	Out, ErrOut string
	// Fatal is the message the command exited with ("" when it succeeded) and Code its exit code.
	Fatal string
	Code  int
	// Actions are the API calls sent, one line each: "verb resource/name [subresource] body".
	Actions []string
	// Client holds the objects as the command left them.
	Client *fakedynamic.FakeDynamicClient
	// Kube is the typed clientset, holding the native objects (its writes are not reflected in
	// Client, nor Client's in it).
	Kube *fakekube.Clientset
}

// Factory is kubectl's test factory plus a typed clientset: it implements
// workload.KubeClientGetter, so that workload.KubeClient(f) returns Kube.
type Factory struct {
	*cmdtesting.TestFactory
	Kube      *fakekube.Clientset
	discovery discovery.CachedDiscoveryInterface
}

// KubeClient returns the fake typed clientset.
func (f *Factory) KubeClient() (kubernetes.Interface, error) { return f.Kube, nil }

// nativeObjects are the objects of objs the typed clientset's scheme knows (not our custom
// resources, nor unstructured objects).
func nativeObjects(objs []runtime.Object) []runtime.Object {
	var out []runtime.Object
	for _, o := range objs {
		if _, ok := o.(runtime.Unstructured); ok {
			continue
		}
		if _, _, err := kubescheme.Scheme.ObjectKinds(o); err == nil {
			out = append(out, o.DeepCopyObject())
		}
	}
	return out
}

// actionLog records the actions of both fake clients in the order they are sent.
type actionLog struct {
	mu    sync.Mutex
	lines []string
}

// recorder is a reaction that records the action and lets the next reactor handle it.
func (l *actionLog) recorder(a clienttesting.Action) (bool, runtime.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, Describe(a))
	return false, nil, nil
}

// Scheme knows our kinds and the native ones the plugin touches.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, appsv1.AddToScheme, corev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// listKinds names the list kind of every resource the fake client may be asked to list.
var listKinds = map[schema.GroupVersionResource]string{
	v1alpha1.SchemeGroupVersion.WithResource("tapps"):                    "TAppList",
	v1alpha1.SchemeGroupVersion.WithResource("uniteddeployments"):        "UnitedDeploymentList",
	v1alpha1.SchemeGroupVersion.WithResource("canaries"):                 "CanaryList",
	v1alpha1.SchemeGroupVersion.WithResource("analysistemplates"):        "AnalysisTemplateList",
	v1alpha1.SchemeGroupVersion.WithResource("clusteranalysistemplates"): "ClusterAnalysisTemplateList",
	appsv1.SchemeGroupVersion.WithResource("deployments"):                "DeploymentList",
	appsv1.SchemeGroupVersion.WithResource("statefulsets"):               "StatefulSetList",
	appsv1.SchemeGroupVersion.WithResource("daemonsets"):                 "DaemonSetList",
	appsv1.SchemeGroupVersion.WithResource("replicasets"):                "ReplicaSetList",
	appsv1.SchemeGroupVersion.WithResource("controllerrevisions"):        "ControllerRevisionList",
	corev1.SchemeGroupVersion.WithResource("pods"):                       "PodList",
}

// NewDynamicClient is the fake dynamic client of the fake cluster, holding objs: for tests that
// drive a package's own entry point rather than a command (the dashboard's server).
func NewDynamicClient(objs ...runtime.Object) *fakedynamic.FakeDynamicClient {
	return fakedynamic.NewSimpleDynamicClientWithCustomListKinds(Scheme(), listKinds, objs...)
}

// Recorder records the API actions of fake clients as Describe renders them; Record is a
// reaction to prepend to a fake client's chain.
type Recorder struct{ actionLog }

// Record records the action and lets the next reactor handle it.
func (r *Recorder) Record(a clienttesting.Action) (bool, runtime.Object, error) { return r.recorder(a) }

// Lines are the actions recorded so far.
func (r *Recorder) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// Run runs the command built by newCmd with args, against a fake cluster holding objs, with no
// width to fit (COLUMNS unset, whatever the shell running the tests exports).
func Run(t *testing.T, newCmd NewCmd, objs []runtime.Object, args ...string) Result {
	t.Helper()
	t.Setenv("COLUMNS", "")
	return run(t, newCmd, objs, args...)
}

// RunWidth is Run with output fitted to a terminal of width columns (COLUMNS=width).
func RunWidth(t *testing.T, width int, newCmd NewCmd, objs []runtime.Object, args ...string) Result {
	t.Helper()
	t.Setenv("COLUMNS", strconv.Itoa(width))
	return run(t, newCmd, objs, args...)
}

func run(t *testing.T, newCmd NewCmd, objs []runtime.Object, args ...string) Result {
	t.Helper()
	tf := &Factory{TestFactory: cmdtesting.NewTestFactory().WithNamespace(Namespace), discovery: Discovery()}
	defer tf.Cleanup()
	client := NewDynamicClient(objs...)
	tf.FakeDynamicClient = client
	tf.Kube = fakekube.NewSimpleClientset(nativeObjects(objs)...)

	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	var res Result
	// CheckErr exits the process; catch it so the test sees the message and the code.
	cmdutil.BehaviorOnFatal(func(msg string, code int) {
		res.Fatal, res.Code = strings.TrimSpace(msg), code
		panic(fatal{})
	})
	defer cmdutil.DefaultBehaviorOnFatal()

	cmd := newCmd(tf, streams)
	// Recorders go first in both reaction chains, after any reactor the verb's constructor (or a
	// test wrapping it) added, so that they see every action.
	log := &actionLog{}
	client.PrependReactor("*", "*", log.recorder)
	client.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		_, _, err := log.recorder(a)
		return false, nil, err
	})
	tf.Kube.PrependReactor("*", "*", log.recorder)
	tf.Kube.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		_, _, err := log.recorder(a)
		return false, nil, err
	})
	// A nil slice would make cobra read the test binary's own os.Args.
	cmd.SetArgs(append([]string{}, args...))
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatal); !ok {
					panic(r)
				}
			}
		}()
		if err := cmd.Execute(); err != nil {
			res.Fatal, res.Code = "error: "+err.Error(), 1
		}
	}()
	res.Out, res.ErrOut, res.Client, res.Kube = out.String(), errOut.String(), client, tf.Kube
	log.mu.Lock()
	res.Actions = append([]string(nil), log.lines...)
	log.mu.Unlock()
	return res
}

type fatal struct{}

// Describe renders one API action as a line: verb, resource/name, subresource, patch body.
func Describe(a clienttesting.Action) string {
	line := a.GetVerb() + " " + a.GetResource().Resource
	if n, ok := a.(interface{ GetName() string }); ok && n.GetName() != "" {
		line += "/" + n.GetName()
	}
	if sub := a.GetSubresource(); sub != "" {
		line += " [" + sub + "]"
	}
	switch a := a.(type) {
	case clienttesting.PatchActionImpl:
		line += fmt.Sprintf(" %s %s", patchTypeName(string(a.GetPatchType())), a.GetPatch())
		if len(a.PatchOptions.DryRun) > 0 {
			line += " dryRun=" + strings.Join(a.PatchOptions.DryRun, ",")
		}
	case clienttesting.ListAction:
		if sel := a.GetListRestrictions().Labels.String(); sel != "" {
			line += " labels=" + sel
		}
		if sel := a.GetListRestrictions().Fields.String(); sel != "" {
			line += " fields=" + sel
		}
	case clienttesting.CreateAction:
		if data, err := json.Marshal(a.GetObject()); err == nil {
			line += " " + string(data)
		}
	}
	return line
}

func patchTypeName(t string) string {
	switch t {
	case "application/merge-patch+json":
		return "merge"
	case "application/json-patch+json":
		return "json"
	case "application/strategic-merge-patch+json":
		return "strategic"
	case "application/apply-patch+yaml":
		return "apply"
	}
	return t
}

// Transcript is the whole of a Result as text, for golden files.
func (r Result) Transcript() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "exit: %d\n", r.Code)
	if r.Fatal != "" {
		fmt.Fprintf(&b, "error: %s\n", strings.TrimPrefix(r.Fatal, "error: "))
	}
	fmt.Fprintf(&b, "--- stdout\n%s", r.Out)
	if r.ErrOut != "" {
		fmt.Fprintf(&b, "--- stderr\n%s", r.ErrOut)
	}
	fmt.Fprintf(&b, "--- api\n")
	for _, a := range r.Actions {
		fmt.Fprintln(&b, a)
	}
	return b.String()
}

// Golden compares got with testdata/<name>.golden, or rewrites the file under -update.
func Golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Stored returns the object named name of resource gvr, in Namespace, as the command left it. It
// fails the test when the command did not succeed or the object is not there.
func (r Result) Stored(t *testing.T, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Fatal)
	}
	obj, err := r.Client.Resource(gvr).Namespace(Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
