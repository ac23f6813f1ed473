package promharness

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
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
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	e := &Exporter{Addr: fmt.Sprintf("127.0.0.1:%d", port)}
	logPath := filepath.Join(dir, "exporter.log")
	startProcess(t, "exporter", bin, logPath, "-listen", e.Addr, "-error-rate", fmt.Sprint(errorRate))
	if err := waitHTTP("http://"+e.Addr+"/metrics", 30*time.Second); err != nil {
		t.Fatalf("exporter did not serve: %v\n%s", err, tailFile(logPath, 20))
	}
	return e
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
