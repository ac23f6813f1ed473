package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// Settings, from the environment so that `go test -bench` needs no custom flags. The defaults
// are the scenarios bench/RESULTS.md reports (issues 4, 5 and 7); smaller values are for trying
// the harness out.
var (
	replicas      = envInt("BENCH_REPLICAS", 1000)               // TApp and Deployment size
	udSubset      = envInt("BENCH_UD_SUBSET", 300)               // replicas per UnitedDeployment subset (3 subsets)
	unrelatedPods = envInt("BENCH_UNRELATED", 10000)             // unrelated pods for the memory and plugin scenarios
	pluginRuns    = envInt("BENCH_PLUGIN_RUNS", 20)              // runs of each plugin command
	clientQPS     = envInt("BENCH_QPS", 100)                     // kube-controller-manager's and the agent's client QPS
	clientBurst   = envInt("BENCH_BURST", 200)                   // ... and burst
	phaseTimeout  = envDuration("BENCH_TIMEOUT", 20*time.Minute) // safety bound of one wait, not a target
)

// agentMemoryLimit, when set (BENCH_AGENT_MEMORY_LIMIT), is every agent's --memory-limit; unset:
// the agent's default, auto, which sets no limit outside a memory-limited cgroup.
var agentMemoryLimit = os.Getenv("BENCH_AGENT_MEMORY_LIMIT")

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// env is the control plane the benchmarks share, started by the first benchmark that needs it
// and stopped by TestMain. Plain `go test` (no -bench) never starts it.
type env struct {
	cluster   *localcluster.Cluster
	kube      *kubernetes.Clientset
	apps      versioned.Interface
	outDir    string // agent logs, the audit log, summary.md
	auditPath string
}

var (
	envOnce   sync.Once
	sharedEnv *env
	envErr    error
	envMu     sync.Mutex // guards sharedEnv for the signal handler
)

func getEnv(b *testing.B) *env {
	b.Helper()
	envOnce.Do(func() {
		e, err := startEnv()
		envMu.Lock()
		sharedEnv, envErr = e, err
		envMu.Unlock()
	})
	if envErr != nil {
		b.Fatal(envErr)
	}
	return sharedEnv
}

func startEnv() (*env, error) {
	outDir := os.Getenv("BENCH_OUT_DIR")
	var err error
	if outDir == "" {
		outDir, err = os.MkdirTemp("", "kubectl-workload-bench-")
	} else {
		err = os.MkdirAll(outDir, 0o755)
	}
	if err != nil {
		return nil, err
	}
	if outDir, err = filepath.Abs(outDir); err != nil {
		return nil, err
	}
	policy := filepath.Join(outDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(AuditPolicy), 0o644); err != nil {
		return nil, err
	}
	e := &env{outDir: outDir, auditPath: filepath.Join(outDir, "audit.log")}
	_ = os.Remove(e.auditPath)
	loadAtStart, commitAtStart = loadAverage(), gitCommit()
	logf("bench: output in %s; client QPS/burst %d/%d for kube-controller-manager and the agent", outDir, clientQPS, clientBurst)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{
		CRDDir:                 localcluster.DefaultCRDDir(),
		ControllerManagerQPS:   float32(clientQPS),
		ControllerManagerBurst: clientBurst,
		ExtraFlags: map[string][]string{localcluster.APIServer: {
			"--audit-policy-file=" + policy,
			"--audit-log-path=" + e.auditPath,
			"--audit-log-format=json",
			// Written before the response: once a wait ends, every write before it is in the log.
			"--audit-log-mode=blocking",
			"--audit-log-maxsize=0",
			"--audit-log-maxbackup=0",
		}},
		Logf: logf,
	})
	if err != nil {
		return nil, err
	}
	e.cluster = c
	if e.kube, err = c.Clientset(); err != nil {
		return nil, err
	}
	if e.apps, err = versioned.NewForConfig(c.RESTConfig()); err != nil {
		return nil, err
	}
	return e, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func TestMain(m *testing.M) {
	flag.Parse()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-signals
		envMu.Lock()
		e := sharedEnv
		envMu.Unlock()
		if e != nil {
			logs, _ := e.cluster.Stop(true)
			fmt.Fprintf(os.Stderr, "bench: interrupted; cluster stopped, component logs in %s\n", logs)
		}
		os.Exit(1)
	}()

	code := m.Run()

	envMu.Lock()
	e := sharedEnv
	envMu.Unlock()
	if e != nil {
		printSummary(e)
		logs, err := e.cluster.Stop(code != 0)
		if code != 0 {
			fmt.Fprintf(os.Stderr, "bench: component logs kept in %s\n", logs)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: stopping the cluster: %v\n", err)
		}
		if os.Getenv("BENCH_KEEP_AUDIT") == "" {
			_ = os.Remove(e.auditPath)
		}
		fmt.Fprintf(os.Stderr, "bench: agent logs and summary.md in %s\n", e.outDir)
	}
	os.Exit(code)
}

// startAgent starts a workload-agent watching every namespace with all its controllers, as
// deployed (unless extraArgs say otherwise), at the benchmark client budget, and waits until it
// is ready. The caller stops it;
// the benchmark's cleanup kills it otherwise.
func (e *env) startAgent(b *testing.B, name string, extraArgs ...string) *agentproc.Agent {
	b.Helper()
	return e.startAgentBinary(b, "", name, extraArgs...)
}

// startAgentBinary is startAgent with another agent binary ("" for the default one).
func (e *env) startAgentBinary(b *testing.B, bin, name string, extraArgs ...string) *agentproc.Agent {
	b.Helper()
	a := agentproc.Start(b, agentproc.Options{
		Binary:     bin,
		Kubeconfig: e.cluster.Kubeconfig,
		Args: append([]string{
			fmt.Sprintf("--qps=%d", clientQPS),
			fmt.Sprintf("--burst=%d", clientBurst),
			// One agent at a time here; a Lease would only add writes to the counts.
			"--leader-elect=false",
			// The deployed agent's verbosity (config/agent/deployment.yaml sets none).
			"-v=0",
		}, append(memoryLimitArgs(), extraArgs...)...),
		LogPath:          filepath.Join(e.outDir, "agent-"+name+".log"),
		LogTailOnFailure: 16 << 10,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := a.WaitReady(ctx); err != nil {
		b.Fatalf("agent %s not ready: %v", name, err)
	}
	return a
}

// memoryLimitArgs is --memory-limit when BENCH_AGENT_MEMORY_LIMIT is set.
func memoryLimitArgs() []string {
	if agentMemoryLimit == "" {
		return nil
	}
	return []string{"--memory-limit=" + agentMemoryLimit}
}

// stopAgent stops an agent with SIGTERM and reports the errors in its log.
func stopAgent(b *testing.B, a *agentproc.Agent, name string) {
	b.Helper()
	if err := a.Stop(); err != nil {
		say("agent %s did not stop cleanly: %v", name, err)
	}
	errs := klogError.FindAllString(a.Log(), -1)
	if len(errs) == 0 {
		say("agent %s: no error in its log (%s)", name, a.LogPath())
		return
	}
	say("agent %s: %d error lines in its log %s; first ones:", name, len(errs), a.LogPath())
	for _, l := range errs[:min(len(errs), 5)] {
		say("    %s", l)
	}
	agentLogErrors[name] = len(errs)
}

// agentLogErrors counts the error lines of each agent's log, for the summary.
var agentLogErrors = map[string]int{}

// klogError matches klog's error lines ("E1121 06:51:23.123456 …").
var klogError = regexp.MustCompile(`(?m)^E\d{4} .*$`)

// resetPeakRSS sets the process's peak RSS (VmHWM) to its current RSS, so that PeakRSS measures
// one phase (proc(5), /proc/pid/clear_refs, value 5).
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o200)
}

// say prints a line of results at once (a benchmark's log is printed only when it ends).
func say(format string, args ...any) {
	fmt.Printf("    "+format+"\n", args...)
}

// pluginBinary returns bin/kubectl-workload: $KUBECTL_WORKLOAD_BIN when set (make bench builds
// it with make build), else built once from the working tree.
var (
	pluginOnce sync.Once
	pluginPath string
	pluginErr  error
)

func pluginBinary(b *testing.B) string {
	b.Helper()
	pluginOnce.Do(func() {
		if p := os.Getenv("KUBECTL_WORKLOAD_BIN"); p != "" {
			pluginPath, pluginErr = filepath.Abs(p)
			return
		}
		root, err := agentproc.ModuleRoot()
		if err != nil {
			pluginErr = err
			return
		}
		pluginPath = filepath.Join(root, "bin", "kubectl-workload")
		cmd := exec.Command("go", "build", "-o", pluginPath, "./cmd/kubectl-workload")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = fmt.Errorf("go build ./cmd/kubectl-workload: %v\n%s", err, strings.TrimSpace(string(out)))
		}
	})
	if pluginErr != nil {
		b.Fatal(pluginErr)
	}
	return pluginPath
}
