package agentproc

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run the real binary against an API server address where nothing listens: the
// agent then never syncs its caches (or never acquires its Lease), which is enough to exercise
// the process handling, the endpoints and signals without a cluster.

const testTimeout = 2 * time.Minute

func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	// Port 1 on loopback: connection refused at once.
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: nobody
  user:
    token: not-a-token
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBinaryHelpAndBadFlag(t *testing.T) {
	bin := Binary(t)
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	for _, flag := range []string{"--kubeconfig", "--qps", "--leader-elect", "--metrics-addr", "--health-addr", "--controllers"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("--help lacks %s", flag)
		}
	}
	cmd := exec.Command(bin, "--workers=0")
	out, err = cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Errorf("--workers=0: exit %d, want 2", cmd.ProcessState.ExitCode())
	}
	if msg := strings.TrimSpace(string(out)); strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "--workers") {
		t.Errorf("--workers=0 printed %q, want one line naming the flag", msg)
	}
}

func TestStartStopWhileSyncing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	a := Start(t, Options{Kubeconfig: unreachableKubeconfig(t), Args: []string{"--leader-elect=false"}})
	if err := a.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	// It cannot sync: not ready, and saying why.
	code, body, err := a.Get(ctx, "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "syncing") {
		t.Errorf("/readyz: %d %q, want 503 syncing", code, body)
	}
	if v, found, err := a.Sample(ctx, "workload_agent_leader", nil); err != nil || !found || v != 1 {
		t.Errorf("workload_agent_leader = %v (found %v, %v), want 1 without leader election", v, found, err)
	}
	if v, found, err := a.Sample(ctx, "workload_agent_caches_synced", nil); err != nil || !found || v != 0 {
		t.Errorf("workload_agent_caches_synced = %v (found %v, %v), want 0", v, found, err)
	}
	rss, err := a.RSS()
	if err != nil || rss <= 0 {
		t.Errorf("RSS %d, %v", rss, err)
	}
	peak, err := a.PeakRSS()
	if err != nil || peak < rss {
		t.Errorf("peak RSS %d (%v) below current RSS %d", peak, err, rss)
	}

	if err := a.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if a.ExitCode() != 0 {
		t.Errorf("exit code %d", a.ExitCode())
	}
	if peak, err := a.PeakRSS(); err != nil || peak <= 0 {
		t.Errorf("peak RSS after exit: %d, %v", peak, err)
	}
	if !strings.Contains(a.Log(), "Controllers stopped") && !strings.Contains(a.Log(), "Starting workload-agent") {
		t.Errorf("log lacks the agent's output:\n%s", a.LogTail(2000))
	}
}

func TestStandbyIsReadyAndStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// With leader election, it cannot reach the Lease: it stands by.
	a := Start(t, Options{Kubeconfig: unreachableKubeconfig(t)})
	if err := a.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := a.Get(ctx, "/readyz"); !strings.Contains(body, "standby") {
		t.Errorf("/readyz: %d %q, want standby", code, body)
	}
	if v, _, _ := a.Sample(ctx, "workload_agent_leader", nil); v != 0 {
		t.Errorf("workload_agent_leader %v on a standby", v)
	}
	if err := a.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
}

func TestKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	a := Start(t, Options{Kubeconfig: unreachableKubeconfig(t), Args: []string{"--leader-elect=false"}})
	if err := a.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	pid := a.Pid()
	a.Kill()
	if a.Running() {
		t.Fatal("still running after Kill")
	}
	if a.ExitCode() != -1 {
		t.Errorf("exit code %d after SIGKILL, want -1 (signalled)", a.ExitCode())
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("process %d still exists", pid)
	}
	if err := a.Stop(); err == nil {
		t.Error("Stop after Kill reports a clean exit")
	}
}

func TestWaitFailsFastWhenTheAgentExits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// A bad flag: the agent exits 2 at once; waiting must not take the whole timeout.
	a := Start(t, Options{Kubeconfig: unreachableKubeconfig(t), Args: []string{"--qps=-1"}, LogTailOnFailure: -1})
	err := a.WaitHealthy(ctx)
	if err == nil {
		t.Fatal("healthy despite a bad flag")
	}
	if ctx.Err() != nil {
		t.Fatalf("waited for the timeout instead of noticing the exit: %v", err)
	}
	if !strings.Contains(err.Error(), "--qps") {
		t.Errorf("the error does not carry the agent's message: %v", err)
	}
	if code, _ := a.Wait(ctx); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
}

// utime (14th field) and stime (15th) are summed; a command name with spaces and parentheses
// does not shift them.
func TestStatCPU(t *testing.T) {
	line := "4242 (workload (a) gent) S 1 4242 4242 0 -1 4194560 9055 0 0 0 1234 56 0 0 20 0 9 0 100 0 0\n"
	got, err := statCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 12900 * time.Millisecond; got != want {
		t.Errorf("statCPU = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 eleven 12 13"} {
		if _, err := statCPU(bad); err == nil {
			t.Errorf("statCPU(%q) accepted", bad)
		}
	}
}
