package pluginverbs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// safety bounds every wait so that a broken controller fails the test instead of hanging it.
const safety = 3 * time.Minute

var (
	pluginOnce sync.Once
	pluginDir  string
	pluginErr  error
)

// pluginPath builds ./cmd/kubectl-workload once per test binary into a temporary directory, to
// be put on PATH so that kubectl finds it as the `workload` plugin.
func pluginPath(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		root, err := agentproc.ModuleRoot()
		if err != nil {
			pluginErr = err
			return
		}
		dir, err := os.MkdirTemp("", "kubectl-workload-e2e-")
		if err != nil {
			pluginErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-workload"), "./cmd/kubectl-workload")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = errors.New("go build ./cmd/kubectl-workload: " + err.Error() + "\n" + string(out))
			return
		}
		pluginDir = dir
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	return pluginDir
}

var (
	kubectlOnce sync.Once
	kubectlBin  string
	kubectlErr  error
)

// kubectlPath returns a kubectl built from the tools module (hack/tools) into the control
// plane's bin directory, building it there the first time (hack/cluster/build-bins.sh kubectl,
// what `make cluster-kubectl` runs; a no-op once built). The plugin is run through it, so that
// kubectl's own plugin discovery finds kubectl-workload on PATH.
func kubectlPath(t *testing.T, binDir string) string {
	t.Helper()
	kubectlOnce.Do(func() {
		bin := filepath.Join(binDir, "kubectl")
		if fi, err := os.Stat(bin); err == nil && fi.Mode()&0o111 != 0 {
			kubectlBin = bin
			return
		}
		root, err := agentproc.ModuleRoot()
		if err != nil {
			kubectlErr = err
			return
		}
		t.Logf("building kubectl into %s (hack/cluster/build-bins.sh kubectl)", binDir)
		cmd := exec.Command("bash", filepath.Join(root, "hack", "cluster", "build-bins.sh"), "kubectl")
		// The same directory as the control plane's binaries, wherever they came from.
		cmd.Env = append(os.Environ(), "KUBECTL_WORKLOAD_BIN_DIR="+binDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			kubectlErr = fmt.Errorf("hack/cluster/build-bins.sh kubectl: %v\n%s", err, out)
			return
		}
		kubectlBin = bin
	})
	if kubectlErr != nil {
		t.Fatal(kubectlErr)
	}
	return kubectlBin
}

type env struct {
	t       *testing.T
	ctx     context.Context
	kube    *kubernetes.Clientset
	apps    versioned.Interface
	dyn     dynamic.Interface
	ns      string
	kubectl string
	path    string
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
	binDir, err := localcluster.ResolveBinDir(t.Context(), t.Logf)
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
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return &env{t: t, ctx: t.Context(), kube: kube, apps: apps, dyn: dyn, ns: ns.Name,
		kubectl: kubectlPath(t, binDir),
		path:    pluginPath(t) + string(os.PathListSeparator) + os.Getenv("PATH")}
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
type result struct {
	out, err string
	code     int
}

// plugin runs `kubectl workload -n NS ARGS` as a person would.
func (e *env) plugin(args ...string) result {
	e.t.Helper()
	cmd := e.command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := result{out: out.String(), err: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		e.t.Fatalf("kubectl workload %v: %v", args, err)
	}
	e.t.Logf("$ kubectl workload %s\n%s%s(exit %d)", strings.Join(args, " "), r.out, r.err, r.code)
	return r
}

// command is `kubectl workload -n NS ARGS` with the plugin on PATH, not yet started.
func (e *env) command(args ...string) *exec.Cmd {
	// -n goes before the verb's arguments, which may end with "-- ARG…".
	cmd := exec.CommandContext(e.ctx, e.kubectl, append([]string{"workload", "-n", e.ns}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+e.path, "KUBECONFIG="+localcluster.Shared(e.t).Kubeconfig, "NO_COLOR=1")
	return cmd
}

// background is a `kubectl workload …` left running while the test goes on: its standard
// output is a pipe (not a terminal), read line by line as it is written.
type background struct {
	args  []string
	mu    sync.Mutex
	lines []string
	err   bytes.Buffer
	done  chan struct{}
	code  int
}

// start runs `kubectl workload -n NS ARGS` in the background. The test's end kills it if it
// is still running.
func (e *env) start(args ...string) *background {
	e.t.Helper()
	b := &background{args: args, done: make(chan struct{})}
	cmd := e.command(args...)
	cmd.Stderr = &b.err
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("kubectl workload %v: %v", args, err)
	}
	started := time.Now()
	go func() {
		defer close(b.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			b.mu.Lock()
			b.lines = append(b.lines, sc.Text())
			b.mu.Unlock()
			e.t.Logf("[%5.1fs kubectl workload %s] %s", time.Since(started).Seconds(), strings.Join(args, " "), sc.Text())
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			b.code = exit.ExitCode()
		case err != nil:
			b.code = -1
		}
	}()
	e.t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// Lines returns what it printed so far, one entry per line.
func (b *background) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

// wait waits for it to exit (at most safety) and returns its exit code and standard error.
func (b *background) wait(t *testing.T) (int, string) {
	t.Helper()
	select {
	case <-b.done:
		return b.code, b.err.String()
	case <-time.After(safety):
		t.Fatalf("kubectl workload %v still runs after %v; it printed:\n%s", b.args, safety, strings.Join(b.Lines(), "\n"))
	}
	return 0, ""
}

// ok runs a verb that must succeed and print want (a substring of its one line).
func (e *env) ok(want string, args ...string) result {
	e.t.Helper()
	r := e.plugin(args...)
	if r.code != 0 || !strings.Contains(r.out, want) {
		e.t.Fatalf("kubectl workload %v: exit %d, stdout %q, stderr %q; want exit 0 and %q", args, r.code, r.out, r.err, want)
	}
	return r
}

// fails runs a verb that must be refused with one line containing want, and checks that the
// object's spec and metadata did not change.
func (e *env) fails(want string, k workload.Kind, name string, args ...string) {
	e.t.Helper()
	before := e.get(k, name)
	r := e.plugin(args...)
	if r.code == 0 || !strings.Contains(r.err, want) || strings.Count(strings.TrimSpace(r.err), "\n") > 0 {
		e.t.Fatalf("kubectl workload %v: exit %d, stderr %q; want a non-zero exit and one line with %q", args, r.code, r.err, want)
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
