// Command localcluster runs the local control plane for people (make
// cluster-up / cluster-down).
//
//	localcluster up   [-state-dir DIR] [-crd-dir DIR]   start in the background
//	localcluster down [-state-dir DIR]                  stop it
//	localcluster run  [-state-dir DIR] [-crd-dir DIR]   run in the foreground until interrupted
//
// up prints, as its last line, the shell command that points kubectl at the
// cluster: export KUBECONFIG=<state-dir>/kubeconfig.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	stateDir := fs.String("state-dir", defaultStateDir(), "directory for the running cluster's state, kubeconfig and logs")
	crdDir := fs.String("crd-dir", localcluster.DefaultCRDDir(), "directory of CRD manifests to install (empty: none)")
	_ = fs.Parse(os.Args[2:])

	s := state{dir: *stateDir}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(s, *crdDir)
	case "down":
		err = down(s)
	case "run":
		err = run(s, *crdDir, nil)
	case "serve": // the background half of up
		err = run(s, *crdDir, func() error { return os.WriteFile(s.ready(), nil, 0o644) })
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcluster %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: localcluster up|down|run [-state-dir DIR] [-crd-dir DIR]")
	os.Exit(2)
}

func defaultStateDir() string {
	if d := os.Getenv("KUBECTL_WORKLOAD_CACHE"); d != "" {
		return filepath.Join(d, "cluster")
	}
	cache, err := os.UserCacheDir() // $XDG_CACHE_HOME or ~/.cache
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "kubectl-workload", "cluster")
}

// state is the layout of the state directory.
type state struct{ dir string }

func (s state) pidFile() string    { return filepath.Join(s.dir, "pid") }
func (s state) ready() string      { return filepath.Join(s.dir, "ready") }
func (s state) kubeconfig() string { return filepath.Join(s.dir, "kubeconfig") }
func (s state) runDir() string     { return filepath.Join(s.dir, "run") }
func (s state) logs() string       { return filepath.Join(s.dir, "logs") }
func (s state) serveLog() string   { return filepath.Join(s.dir, "localcluster.log") }

// running returns the pid of a live cluster process, or 0.
func (s state) running() int {
	data, err := os.ReadFile(s.pidFile())
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || !alive(pid) {
		return 0
	}
	return pid
}

// alive reports whether pid runs. A zombie does not count: the cluster
// process is reparented once up exits, and a container's init may be slow
// to reap it, or never do so.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// up starts `localcluster serve` detached from the terminal and returns once
// the cluster is ready.
func up(s state, crdDir string) error {
	if pid := s.running(); pid != 0 {
		fmt.Printf("local cluster already running (pid %d); make cluster-down stops it\n", pid)
		fmt.Printf("export KUBECONFIG=%s\n", s.kubeconfig())
		return nil
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.Create(s.serveLog())
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(self, "serve", "-state-dir", s.dir, "-crd-dir", crdDir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A new session: the cluster must outlive make and the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	fmt.Fprintf(os.Stderr, "starting the local cluster (log: %s)\n", s.serveLog())
	for {
		if _, err := os.Stat(s.ready()); err == nil {
			break
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(s.serveLog())
			return fmt.Errorf("cluster process exited (%v):\n%s", err, log)
		case <-time.After(200 * time.Millisecond):
		}
	}
	fmt.Printf("local cluster running (pid %d); nodes in %s; logs in %s; make cluster-down stops it\n",
		cmd.Process.Pid, strings.Join(localcluster.Zones, ", "), filepath.Join(s.runDir(), "logs"))
	fmt.Printf("export KUBECONFIG=%s\n", s.kubeconfig())
	return nil
}

// run runs a cluster until SIGINT or SIGTERM. The kubeconfig is copied to a
// stable path in the state directory, and the logs are kept there on exit.
func run(s state, crdDir string, onReady func() error) error {
	if pid := s.running(); pid != 0 && pid != os.Getpid() {
		return fmt.Errorf("a local cluster is already running (pid %d)", pid)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(s.pidFile(), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(s.pidFile())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c, err := localcluster.Start(ctx, localcluster.Options{
		CRDDir:      crdDir,
		Dir:         s.runDir(),
		KeepLogsDir: s.logs(),
	})
	if err != nil {
		return err
	}
	kubeconfig, err := os.ReadFile(c.Kubeconfig)
	if err == nil {
		err = os.WriteFile(s.kubeconfig(), kubeconfig, 0o600)
	}
	if err == nil && onReady != nil {
		err = onReady()
	}
	if err == nil {
		fmt.Printf("local cluster ready; export KUBECONFIG=%s\n", s.kubeconfig())
		<-ctx.Done()
	}
	logs, stopErr := c.Stop(true)
	os.Remove(s.kubeconfig())
	os.Remove(s.ready())
	fmt.Printf("local cluster stopped; logs in %s\n", logs)
	return errors.Join(err, stopErr)
}

// down stops the cluster process and waits until it has stopped its
// components and cleaned up.
func down(s state) error {
	pid := s.running()
	if pid == 0 {
		fmt.Println("no local cluster running")
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for alive(pid) {
		if time.Now().After(deadline) {
			// Its components die with it (Pdeathsig).
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("cluster process %d did not stop in time; killed it", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("local cluster stopped; logs in %s\n", s.logs())
	return nil
}
