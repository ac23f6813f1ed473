package localcluster

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

var shared *Cluster

// RunTestMain runs a test package against one cluster: it starts the
// cluster, runs the tests, stops the cluster and exits with the tests'
// status. It never returns. Use it as the package's TestMain:
//
//	func TestMain(m *testing.M) {
//		localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.DefaultCRDDir()})
//	}
//
// Tests get the cluster with Shared. When tests fail, or the run is
// interrupted by SIGINT or SIGTERM, the component logs are kept and their
// directory is printed; otherwise nothing is left behind. With -short no
// cluster is started and Shared skips the tests that need one.
func RunTestMain(m *testing.M, opts Options) {
	os.Exit(runTestMain(m, opts))
}

// RunAuditedTestMain is RunTestMain with the API server's audit log on (WithAuditLog with policy
// and extraFlags): it sets *auditLog, when not nil, to the log's path before the tests run.
// With -short no cluster starts and no log is written.
func RunAuditedTestMain(m *testing.M, opts Options, auditLog *string, policy string, extraFlags ...string) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if !testing.Short() {
		path, err := WithAuditLog(&opts, policy, extraFlags...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if auditLog != nil {
			*auditLog = path
		}
	}
	RunTestMain(m, opts)
}

// RunFleetTestMain is RunTestMain for a hub and its members (StartFleet): tests get them with
// SharedFleet, and Shared returns the hub, so that what works on one cluster (test/e2e/e2eenv's
// Setup and StartAgent) works on the hub.
func RunFleetTestMain(m *testing.M, opts FleetOptions) {
	os.Exit(runMain(m, func(ctx context.Context) (stopper, error) {
		f, err := StartFleet(ctx, opts)
		if err != nil {
			return nil, err
		}
		sharedFleet, shared = f, f.Hub
		return f, nil
	}))
}

var sharedFleet *Fleet

// SharedFleet returns the fleet RunFleetTestMain started, as Shared does for one cluster.
func SharedFleet(t testing.TB) *Fleet {
	t.Helper()
	if sharedFleet == nil {
		if testing.Short() {
			t.Skip("needs the local fleet, which -short does not start")
		}
		t.Fatal("no local fleet: the package's TestMain must call localcluster.RunFleetTestMain")
	}
	return sharedFleet
}

// stopper is what runMain stops once the tests are done: a Cluster or a Fleet.
type stopper interface {
	Stop(keepLogs bool) (string, error)
}

func runTestMain(m *testing.M, opts Options) int {
	return runMain(m, func(ctx context.Context) (stopper, error) {
		c, err := Start(ctx, opts)
		shared = c
		return c, err
	})
}

func runMain(m *testing.M, start func(context.Context) (stopper, error)) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		return m.Run()
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupted := make(chan struct{})
	go func() {
		if _, ok := <-signals; ok {
			cancel()
			close(interrupted)
		}
	}()

	c, err := start(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		return 1
	}

	// Tests do not watch for signals; stop the cluster here and exit, or the
	// components would outlive the interrupted test binary's cleanup.
	go func() {
		<-interrupted
		logs, err := c.Stop(true)
		fmt.Fprintf(os.Stderr, "localcluster: interrupted; cluster stopped, logs in %s %v\n", logs, errOrEmpty(err))
		os.Exit(1)
	}()

	code := m.Run()
	signal.Stop(signals)
	logs, err := c.Stop(code != 0)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "localcluster: tests failed; component logs kept in %s\n", logs)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: stopping: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func errOrEmpty(err error) any {
	if err == nil {
		return ""
	}
	return err
}

// Shared returns the cluster RunTestMain started for this test package. It
// skips the test under -short, where no cluster runs, and fails it when the
// package has no RunTestMain.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	if shared == nil {
		if testing.Short() {
			t.Skip("needs the local cluster, which -short does not start")
		}
		t.Fatal("no local cluster: the package's TestMain must call localcluster.RunTestMain")
	}
	return shared
}
