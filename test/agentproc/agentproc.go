// Package agentproc runs the workload-agent binary as a real process for end-to-end tests and
// benchmarks: it builds bin/workload-agent once per test binary, starts it against a kubeconfig
// with its HTTP endpoints on free loopback ports, captures its log (printed when the test
// fails), stops it with SIGTERM or kills it with SIGKILL, and reads its peak memory.
//
//	a := agentproc.Start(t, agentproc.Options{Kubeconfig: cluster.Kubeconfig()})
//	if err := a.WaitReady(ctx); err != nil { t.Fatal(err) }
//	...
//	if err := a.Stop(); err != nil { t.Fatal(err) } // SIGTERM; nil when it exited 0
//
// A started agent never outlives its test: t.Cleanup kills its process group, and the kernel
// kills it if the test binary dies first (Pdeathsig).
package agentproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// BinaryEnv names an environment variable that, when set, is the workload-agent binary to run
// instead of building one.
const BinaryEnv = "WORKLOAD_AGENT_BIN"

// DefaultStopTimeout is how long Stop and the cleanup wait for the agent to exit after SIGTERM
// before they kill it.
const DefaultStopTimeout = 30 * time.Second

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the path of a workload-agent binary built from the working tree, building it
// the first time it is called in the test binary: `go build -o bin/workload-agent ./cmd/agent`
// in the module root, through a temporary file renamed into place, so that test binaries of
// several packages building at once never run a half-written file. $WORKLOAD_AGENT_BIN, when
// set, is used as is.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if bin := os.Getenv(BinaryEnv); bin != "" {
			buildPath, buildErr = filepath.Abs(bin)
			return
		}
		buildPath, buildErr = build()
	})
	if buildErr != nil {
		t.Fatalf("agentproc: %v", buildErr)
	}
	return buildPath
}

func build() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	binDir := filepath.Join(root, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(binDir, ".workload-agent-*.tmp")
	if err != nil {
		return "", err
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath) // no-op after the rename

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", tmpPath, "./cmd/agent")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/agent: %v\n%s", err, out)
	}
	final := filepath.Join(binDir, "workload-agent")
	if err := os.Rename(tmpPath, final); err != nil {
		return "", err
	}
	return final, nil
}

func goTool() string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ModuleRoot returns the directory of the module's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// Options configure a started agent.
type Options struct {
	// Kubeconfig is passed as --kubeconfig. Required.
	Kubeconfig string
	// Binary is the agent binary to run; default Binary(t). A benchmark sets it to compare
	// another build of the agent in the same run.
	Binary string
	// Args are more flags, after the defaults so that they override them, e.g.
	// "--leader-elect=false", "--namespace=e2e", "--controllers=tapp", "-v=4".
	//
	// The defaults are --metrics-addr and --health-addr on free 127.0.0.1 ports,
	// --leader-elect-namespace=kube-system (a namespace every cluster has) and -v=2. Overriding
	// --metrics-addr or --health-addr leaves MetricsURL or HealthURL as set by the defaults.
	Args []string
	// Env is added to the agent's environment (which is the test's).
	Env []string
	// LogPath is where the agent's output goes. Default: a file in t.TempDir().
	LogPath string
	// StopTimeout bounds Stop and the cleanup; default DefaultStopTimeout.
	StopTimeout time.Duration
	// LogTailOnFailure is how many bytes of the end of the log the cleanup prints when the test
	// failed; default 64 KiB, negative for none.
	LogTailOnFailure int
}

// Agent is a started workload-agent process.
type Agent struct {
	t       testing.TB
	opts    Options
	cmd     *exec.Cmd
	logPath string
	args    []string

	// HealthURL and MetricsURL are http://127.0.0.1:port of the health and metrics servers.
	HealthURL, MetricsURL string

	done  chan struct{} // closed once the process has exited and been reaped
	state *os.ProcessState
	err   error
}

// Start builds the agent if needed and starts it. It does not wait for it to become healthy (see
// WaitHealthy, WaitReady). The process is killed when the test ends, if still running.
func Start(t testing.TB, opts Options) *Agent {
	t.Helper()
	if opts.Kubeconfig == "" {
		t.Fatal("agentproc: Options.Kubeconfig is required")
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.LogTailOnFailure == 0 {
		opts.LogTailOnFailure = 64 << 10
	}
	bin := opts.Binary
	if bin == "" {
		bin = Binary(t)
	}
	ports, err := freePorts(2)
	if err != nil {
		t.Fatalf("agentproc: free ports: %v", err)
	}
	a := &Agent{
		t:          t,
		opts:       opts,
		logPath:    opts.LogPath,
		HealthURL:  fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		done:       make(chan struct{}),
	}
	if a.logPath == "" {
		a.logPath = filepath.Join(t.TempDir(), "workload-agent.log")
	}
	a.args = append([]string{
		"--kubeconfig=" + opts.Kubeconfig,
		fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[1]),
		"--leader-elect-namespace=kube-system",
		"-v=2",
	}, opts.Args...)

	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("agentproc: log file: %v", err)
	}
	defer logFile.Close() // the child has its own descriptor
	fmt.Fprintf(logFile, "+ %s %s\n", bin, strings.Join(a.args, " "))

	a.cmd = exec.Command(bin, a.args...)
	a.cmd.Stdout = logFile
	a.cmd.Stderr = logFile
	a.cmd.Env = append(os.Environ(), opts.Env...)
	a.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group, so that Kill takes anything it started with it, and a terminal's
		// Ctrl-C reaches only the test (which then cleans up).
		Setpgid: true,
		// Should the test binary die without cleaning up, the kernel kills the agent.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("agentproc: starting %s: %v", bin, err)
	}
	go func() {
		err := a.cmd.Wait()
		a.state, a.err = a.cmd.ProcessState, err
		close(a.done)
	}()
	t.Cleanup(a.cleanup)
	return a
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (a *Agent) cleanup() {
	if a.Running() {
		a.Kill()
	}
	if a.t.Failed() && a.opts.LogTailOnFailure > 0 {
		a.t.Logf("workload-agent (pid %d, args %s) log %s, last %d bytes:\n%s",
			a.Pid(), strings.Join(a.args, " "), a.logPath, a.opts.LogTailOnFailure, a.LogTail(a.opts.LogTailOnFailure))
	}
}

// Pid is the agent's process id.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Args are the agent's command-line arguments.
func (a *Agent) Args() []string { return append([]string(nil), a.args...) }

// LogPath is the file the agent's stdout and stderr go to.
func (a *Agent) LogPath() string { return a.logPath }

// Log returns the agent's output so far.
func (a *Agent) Log() string {
	b, _ := os.ReadFile(a.logPath)
	return string(b)
}

// LogTail returns at most the last n bytes of the agent's output, from a line start.
func (a *Agent) LogTail(n int) string {
	f, err := os.Open(a.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	off := st.Size() - int64(n)
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// Exited is closed once the process has exited.
func (a *Agent) Exited() <-chan struct{} { return a.done }

// Running reports whether the process has not exited yet.
func (a *Agent) Running() bool {
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// ExitCode is the exit code once the process has exited: -1 while it runs or when a signal
// ended it.
func (a *Agent) ExitCode() int {
	if a.Running() {
		return -1
	}
	return a.state.ExitCode()
}

// exitError describes how the process ended, with the end of its log.
func (a *Agent) exitError() error {
	return fmt.Errorf("workload-agent exited (%v); end of its log %s:\n%s", a.err, a.logPath, a.LogTail(4<<10))
}

// Kill sends SIGKILL to the agent's process group and waits until the agent is reaped.
func (a *Agent) Kill() {
	if a.Running() {
		_ = syscall.Kill(-a.Pid(), syscall.SIGKILL)
	}
	<-a.done
}

// Stop sends SIGTERM and waits for the agent to exit, up to Options.StopTimeout, after which it
// kills it. It returns nil when the agent exited 0, else an error with the end of its log.
func (a *Agent) Stop() error {
	if a.Running() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-a.done:
	case <-time.After(a.opts.StopTimeout):
		a.Kill()
		return fmt.Errorf("workload-agent did not exit within %v of SIGTERM and was killed; end of its log:\n%s",
			a.opts.StopTimeout, a.LogTail(4<<10))
	}
	if a.state.ExitCode() != 0 {
		return a.exitError()
	}
	return nil
}

// Wait waits for the agent to exit on its own (or ctx to end) and returns its exit code.
func (a *Agent) Wait(ctx context.Context) (int, error) {
	select {
	case <-a.done:
		return a.ExitCode(), nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// WaitHealthy waits until /healthz answers 200. It fails at once when the agent exits.
func (a *Agent) WaitHealthy(ctx context.Context) error {
	return a.waitOK(ctx, a.HealthURL+"/healthz")
}

// WaitReady waits until /readyz answers 200: the agent leads and its caches synced, or it
// stands by as a non-leader. It fails at once when the agent exits.
func (a *Agent) WaitReady(ctx context.Context) error {
	return a.waitOK(ctx, a.HealthURL+"/readyz")
}

// WaitLeading waits until the agent reports workload_agent_leader 1 and workload_agent_caches_synced
// 1 on /metrics: it holds the Lease (or does not elect) and runs its controllers.
func (a *Agent) WaitLeading(ctx context.Context) error {
	return a.poll(ctx, "leading with synced caches", func(ctx context.Context) (bool, string) {
		mfs, err := a.Metrics(ctx)
		if err != nil {
			return false, err.Error()
		}
		leader, synced := gaugeValue(mfs["workload_agent_leader"]), gaugeValue(mfs["workload_agent_caches_synced"])
		return leader == 1 && synced == 1, fmt.Sprintf("workload_agent_leader %v, workload_agent_caches_synced %v", leader, synced)
	})
}

func gaugeValue(mf *dto.MetricFamily) float64 {
	if mf == nil || len(mf.GetMetric()) == 0 {
		return -1
	}
	return mf.GetMetric()[0].GetGauge().GetValue()
}

func (a *Agent) waitOK(ctx context.Context, url string) error {
	return a.poll(ctx, url+" to answer 200", func(ctx context.Context) (bool, string) {
		code, body, err := get(ctx, url)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, strings.TrimSpace(body))
	})
}

// poll checks cond every 100ms until it holds, ctx ends or the agent exits.
func (a *Agent) poll(ctx context.Context, what string, cond func(context.Context) (bool, string)) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	last := "not checked yet"
	for {
		ok, detail := cond(ctx)
		if ok {
			return nil
		}
		last = detail
		select {
		case <-a.done:
			return fmt.Errorf("waiting for %s: %w", what, a.exitError())
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %s)", what, ctx.Err(), last)
		case <-ticker.C:
		}
	}
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func get(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Get fetches a path of the health server (e.g. "/readyz") and returns the status code and body.
func (a *Agent) Get(ctx context.Context, path string) (int, string, error) {
	return get(ctx, a.HealthURL+path)
}

// MetricsText fetches /metrics in the Prometheus text format.
func (a *Agent) MetricsText(ctx context.Context) (string, error) {
	code, body, err := get(ctx, a.MetricsURL+"/metrics")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %d %s", code, body)
	}
	return body, nil
}

// Metrics fetches and parses /metrics, by metric family name.
func (a *Agent) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	text, err := a.MetricsText(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// Sample returns the value of the series of metric name whose labels include the given ones
// (a counter, gauge or untyped value; for a histogram or summary, its sample count). found is
// false when no series matches.
func (a *Agent) Sample(ctx context.Context, name string, labels map[string]string) (value float64, found bool, err error) {
	mfs, err := a.Metrics(ctx)
	if err != nil {
		return 0, false, err
	}
	mf := mfs[name]
	if mf == nil {
		return 0, false, nil
	}
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true, nil
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true, nil
		case m.GetUntyped() != nil:
			return m.GetUntyped().GetValue(), true, nil
		case m.GetHistogram() != nil:
			return float64(m.GetHistogram().GetSampleCount()), true, nil
		case m.GetSummary() != nil:
			return float64(m.GetSummary().GetSampleCount()), true, nil
		}
	}
	return 0, false, nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// PeakRSS returns the agent's peak resident set size in bytes: VmHWM from /proc/<pid>/status
// while it runs, the maximum RSS the kernel reported when it was reaped after it exited.
func (a *Agent) PeakRSS() (int64, error) {
	if a.Running() {
		v, err := procStatus(a.Pid(), "VmHWM")
		if err == nil || a.Running() {
			return v, err
		}
	}
	<-a.done
	ru, ok := a.state.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0, errors.New("no resource usage for the exited agent")
	}
	return ru.Maxrss * 1024, nil // kilobytes on Linux
}

// RSS returns the agent's current resident set size in bytes (VmRSS), while it runs.
func (a *Agent) RSS() (int64, error) {
	return procStatus(a.Pid(), "VmRSS")
}

// RSSParts returns the agent's resident memory now, split as /proc/<pid>/status does: anonymous
// (heap, stacks: what the Go runtime allocated) and file-backed (the binary's pages read in).
func (a *Agent) RSSParts() (anon, file int64, err error) {
	if anon, err = procStatus(a.Pid(), "RssAnon"); err != nil {
		return 0, 0, err
	}
	file, err = procStatus(a.Pid(), "RssFile")
	return anon, file, err
}

// CPUTime returns the CPU time the running agent has used, user and system, from
// /proc/<pid>/stat.
func (a *Agent) CPUTime() (time.Duration, error) { return ProcCPUTime(a.Pid()) }

// ProcCPUTime returns the CPU time a running process has used, user and system, from
// /proc/<pid>/stat: the same figure for the agent and for another controller measured beside
// it (test/bench runs Argo Rollouts' controller).
func ProcCPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return statCPU(string(b))
}

// ProcStatus reads a "Name:   1234 kB" field of /proc/<pid>/status (VmHWM, VmRSS, RssAnon,
// RssFile), in bytes, for any running process.
func ProcStatus(pid int, field string) (int64, error) { return procStatus(pid, field) }

// statCPU reads utime and stime (fields 14 and 15, clock ticks of 1/100 s, USER_HZ on Linux)
// of a /proc/<pid>/stat line.
func statCPU(stat string) (time.Duration, error) {
	// The command name, field 2, is in parentheses and may hold spaces and parentheses: count
	// from after its last ")".
	i := strings.LastIndex(stat, ") ")
	if i < 0 {
		return 0, fmt.Errorf("/proc/PID/stat: unexpected %q", stat)
	}
	f := strings.Fields(stat[i+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat: unexpected %q", stat)
	}
	// utime and stime are fields 12 and 13 after the name.
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// procStatus reads a "Name:   1234 kB" field of /proc/<pid>/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("/proc/%d/status %s: unexpected %q", pid, field, rest)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, field, err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}
