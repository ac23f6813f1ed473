// Package promharness runs a real Prometheus, and the small exporter it scrapes, for tests
// that need one: both are processes on loopback, started by the test that asks and stopped
// when it ends.
//
// Prometheus is built from its Go module by hack/prometheus/build.sh (pinned in
// hack/tools/prometheus/go.mod) into the cache shared with the local control plane; `make
// test` builds it first (target prometheus-bin), so a test only finds it. The exporter
// (test/exporter) is built with go build into the test's temporary directory.
package promharness

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// BinDirEnv points at a directory holding a prebuilt prometheus, bypassing the cache.
const BinDirEnv = "KUBECTL_WORKLOAD_PROMETHEUS_DIR"

// ScrapeInterval is how often Prometheus scrapes its targets here: short, so that a rate
// over a few seconds has samples soon after a test starts.
const ScrapeInterval = time.Second

// Prometheus is a running Prometheus server.
type Prometheus struct {
	// URL is the base URL of its HTTP API, e.g. http://127.0.0.1:40123.
	URL string
	// Dir holds its configuration, data and log.
	Dir string
}

// Start runs Prometheus on loopback, scraping targets (host:port, at /metrics) every
// ScrapeInterval, and returns once it is ready. It stops when the test ends; its log is
// printed when the test failed.
func Start(t testing.TB, targets ...string) *Prometheus {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config(targets)), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	p := &Prometheus{URL: "http://" + listen, Dir: dir}
	startProcess(t, "prometheus", bin, filepath.Join(dir, "prometheus.log"),
		"--config.file="+cfg,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen,
	)
	if err := waitHTTP(p.URL+"/-/ready", 60*time.Second); err != nil {
		t.Fatalf("prometheus did not become ready: %v\n%s", err, tailFile(filepath.Join(dir, "prometheus.log"), 30))
	}
	return p
}

func config(targets []string) string {
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	return fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
- job_name: exporter
  static_configs:
  - targets: [%[2]s]
`, ScrapeInterval, strings.Join(quoted, ", "))
}

// Binary returns the path of the cached prometheus, building it (hack/prometheus/build.sh)
// if it is missing.
func Binary(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(BinDirEnv); dir != "" && executable(filepath.Join(dir, "prometheus")) {
		return filepath.Join(dir, "prometheus")
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "hack", "prometheus", "build.sh")
	out, err := exec.Command("bash", script, "--print-dir").Output()
	if err != nil {
		t.Fatalf("%s --print-dir: %v", script, err)
	}
	bin := filepath.Join(strings.TrimSpace(string(out)), "prometheus")
	if executable(bin) {
		return bin
	}
	t.Logf("promharness: building prometheus with %s (run `make prometheus-bin` first to keep it out of test timeouts)", script)
	build := exec.Command("bash", script)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil || !executable(bin) {
		t.Fatalf("building prometheus with %s: %v", script, err)
	}
	return bin
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Query runs an instant query through the HTTP API and returns the raw JSON answer, for
// waiting on data in tests (the analysis code under test uses its own client).
func (p *Prometheus) Query(ctx context.Context, q string) (string, error) {
	u := p.URL + "/api/v1/query?query=" + url.QueryEscape(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
	}
	if resp.StatusCode != http.StatusOK {
		return b.String(), fmt.Errorf("query %q: %s", q, resp.Status)
	}
	return b.String(), sc.Err()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitHTTP(u string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", u, resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startProcess runs bin with its output in logPath and stops it (SIGTERM, then SIGKILL after
// 10s) when the test ends, printing the log's tail if the test failed.
func startProcess(t testing.TB, name, bin, logPath string, args ...string) *exec.Cmd {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log (%s):\n%s", name, logPath, tailFile(logPath, 40))
		}
	})
	return cmd
}

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
