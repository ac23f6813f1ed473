package promharness

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// Exporter is a running test/exporter: an application whose request error rate a test sets.
type Exporter struct {
	// Addr is host:port, the scrape target.
	Addr string
}

// StartExporter builds and runs test/exporter on loopback with the given error rate; it stops
// when the test ends.
func StartExporter(t testing.TB, errorRate float64) *Exporter {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "exporter")
	build := exec.Command("go", "build", "-o", bin, "./test/exporter")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building test/exporter: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-error-rate", fmt.Sprint(errorRate))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting exporter: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
		}
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case line := <-first:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			t.Fatalf("exporter said %q, want \"listening on ADDR\"", line)
		}
		return &Exporter{Addr: addr}
	case <-time.After(30 * time.Second):
		t.Fatal("exporter did not start listening within 30s")
	}
	return nil
}

// SetErrorRate sets the share of requests that fail from now on.
func (e *Exporter) SetErrorRate(t testing.TB, v float64) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("http://%s/error-rate?value=%g", e.Addr, v), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("setting the exporter's error rate: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("setting the exporter's error rate to %g: %s", v, resp.Status)
	}
}
