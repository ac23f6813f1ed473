// Package pluginexec runs the plugin in end-to-end tests as a person runs it: the
// kubectl-workload binary built from the working tree, put on PATH, and run through a real
// kubectl as `kubectl workload …`, so that kubectl's own plugin discovery finds it. kubectl is
// built from the tools module (hack/cluster/build-bins.sh kubectl, what `make cluster-kubectl`
// runs) into the local control plane's bin directory when it is not there yet.
//
//	r := pluginexec.New(t, t.Context(), cluster.Kubeconfig, "my-namespace")
//	res := r.Run("promote", "canary/checkout")
//	follow := r.Start("status", "-w", "canary/checkout") // in the background
//	code, stderr := follow.Wait(t, 3*time.Minute)
package pluginexec

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

var (
	pluginOnce sync.Once
	pluginDir  string
	pluginErr  error

	kubectlOnce sync.Once
	kubectlBin  string
	kubectlErr  error
)

// PluginDir builds ./cmd/kubectl-workload once per test binary into bin/e2e, a directory that
// holds nothing else, to be put on PATH so that kubectl finds it as the `workload` plugin, and returns the directory.
func PluginDir(t testing.TB) string {
	t.Helper()
	pluginOnce.Do(func() {
		root, err := agentproc.ModuleRoot()
		if err != nil {
			pluginErr = err
			return
		}
		// bin/e2e of the repository (ignored by git), not a temporary directory: nothing is left
		// behind in /tmp, and parallel test packages replace the binary atomically.
		dir := filepath.Join(root, "bin", "e2e")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			pluginErr = err
			return
		}
		tmp, err := os.CreateTemp(dir, ".kubectl-workload-*")
		if err != nil {
			pluginErr = err
			return
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		cmd := exec.Command("go", "build", "-o", tmp.Name(), "./cmd/kubectl-workload")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = errors.New("go build ./cmd/kubectl-workload: " + err.Error() + "\n" + string(out))
			return
		}
		if err := os.Rename(tmp.Name(), filepath.Join(dir, "kubectl-workload")); err != nil {
			pluginErr = err
			return
		}
		pluginDir = dir
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	return pluginDir
}

// Kubectl returns the kubectl of the local control plane's bin directory, building it there
// the first time (hack/cluster/build-bins.sh kubectl; a no-op once built).
func Kubectl(t testing.TB) string {
	t.Helper()
	kubectlOnce.Do(func() {
		binDir, err := localcluster.ResolveBinDir(context.Background(), t.Logf)
		if err != nil {
			kubectlErr = err
			return
		}
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

// Runner runs `kubectl workload …` against one cluster.
type Runner struct {
	t   *testing.T
	ctx context.Context
	// Kubectl is the kubectl binary; PluginDir the directory holding kubectl-workload.
	Kubectl, PluginDir string
	// Kubeconfig is the cluster's; Namespace, when set, is passed as -n.
	Kubeconfig, Namespace string
	// Env is added to the command's environment, after (so over) the defaults.
	Env []string
}

// New returns a Runner for the cluster of kubeconfig, building the plugin and kubectl if need be.
func New(t *testing.T, ctx context.Context, kubeconfig, namespace string) *Runner {
	t.Helper()
	return &Runner{t: t, ctx: ctx, Kubectl: Kubectl(t), PluginDir: PluginDir(t), Kubeconfig: kubeconfig, Namespace: namespace}
}

// Command is `kubectl workload [-n NS] ARGS` with the plugin first on PATH, NO_COLOR set and
// COLUMNS empty (a shell's would cut get's lines), not yet started.
func (r *Runner) Command(args ...string) *exec.Cmd {
	all := []string{"workload"}
	if r.Namespace != "" {
		// -n goes before the verb's arguments, which may end with "-- ARG…".
		all = append(all, "-n", r.Namespace)
	}
	cmd := exec.CommandContext(r.ctx, r.Kubectl, append(all, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+r.PluginDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+r.Kubeconfig, "NO_COLOR=1", "COLUMNS=")
	cmd.Env = append(cmd.Env, r.Env...)
	return cmd
}

// Result is what one `kubectl workload …` printed and how it exited.
type Result struct {
	Out, Err string
	Code     int
}

// Run runs `kubectl workload ARGS` to its end and logs what it printed.
func (r *Runner) Run(args ...string) Result {
	r.t.Helper()
	cmd := r.Command(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	res := Result{Out: out.String(), Err: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.Code = exit.ExitCode()
	case err != nil:
		r.t.Fatalf("kubectl workload %v: %v", args, err)
	}
	r.t.Logf("$ kubectl workload %s\n%s%s(exit %d)", strings.Join(args, " "), res.Out, res.Err, res.Code)
	return res
}

// Background is a `kubectl workload …` left running while the test goes on: its standard
// output is a pipe (not a terminal), read line by line as it is written.
type Background struct {
	args  []string
	mu    sync.Mutex
	lines []string
	err   bytes.Buffer
	done  chan struct{}
	code  int
}

// Start runs `kubectl workload ARGS` in the background, logging each line it prints with the
// time since it started. The test's end kills it if it still runs.
func (r *Runner) Start(args ...string) *Background {
	r.t.Helper()
	b := &Background{args: args, done: make(chan struct{})}
	cmd := r.Command(args...)
	cmd.Stderr = &b.err
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("kubectl workload %v: %v", args, err)
	}
	started := time.Now()
	go func() {
		defer close(b.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			b.mu.Lock()
			b.lines = append(b.lines, sc.Text())
			b.mu.Unlock()
			r.t.Logf("[%5.1fs kubectl workload %s] %s", time.Since(started).Seconds(), strings.Join(args, " "), sc.Text())
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
	r.t.Cleanup(func() {
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
func (b *Background) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}

// Exited reports whether it has exited already.
func (b *Background) Exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// Wait waits at most timeout for it to exit and returns its exit code and standard error.
func (b *Background) Wait(t testing.TB, timeout time.Duration) (int, string) {
	t.Helper()
	select {
	case <-b.done:
		return b.code, b.err.String()
	case <-time.After(timeout):
		t.Fatalf("kubectl workload %v still runs after %v; it printed:\n%s", b.args, timeout, strings.Join(b.Lines(), "\n"))
	}
	return 0, ""
}
