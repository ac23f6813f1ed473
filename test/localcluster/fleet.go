package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HubControllers are the kube-controller-manager controllers of a fleet's hub: namespaces,
// service accounts and garbage collection. No pod runs on a hub, so no workload controller.
var HubControllers = []string{
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"garbage-collector-controller",
}

// FleetOptions configure a hub and its member clusters.
type FleetOptions struct {
	// Hub configures the hub. It never runs nodes (NoNodes is forced); Controllers nil means
	// HubControllers.
	Hub Options
	// Members names the member clusters, e.g. "member-1"; each is started from Member.
	Members []string
	// Member configures every member: a full cluster with nodes.
	Member Options
	// KeepLogsDir is where Stop moves the logs it is asked to keep, one subdirectory per cluster
	// (hub, then each member's name) and etcd.log; empty means a new temporary directory.
	KeepLogsDir string
	// Logf reports progress; nil means standard error.
	Logf func(format string, args ...any)
}

// Fleet is a hub and its members, each a control plane of its own (its own API server, CA,
// tokens and, for members, kube-controller-manager, kube-scheduler and kwok), all stored in one
// etcd that the fleet owns, under a prefix per API server (/hub/registry, /<member>/registry).
type Fleet struct {
	Hub     *Cluster
	Members map[string]*Cluster
	// Names are the members' names in the order given.
	Names []string
	// StartTime is how long StartFleet took once the binaries existed.
	StartTime time.Duration

	opts     FleetOptions
	dir      string // etcd's data and log
	etcd     *process
	stopOnce sync.Once
	stopLogs string
	stopErr  error
}

// StartFleet starts the etcd, then the hub and the members side by side (their start is mostly
// waiting), and waits until every one is usable (see Start). On error nothing is left running.
func StartFleet(ctx context.Context, opts FleetOptions) (*Fleet, error) {
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	if len(opts.Members) == 0 {
		return nil, errors.New("localcluster: a fleet needs at least one member")
	}
	f := &Fleet{Members: map[string]*Cluster{}, Names: opts.Members, opts: opts}
	if err := f.startEtcd(ctx); err != nil {
		logs, stopErr := f.Stop(true)
		return nil, errors.Join(fmt.Errorf("starting the fleet's etcd: %w (logs kept in %s)", err, logs), stopErr)
	}
	start := time.Now()
	hubOpts := opts.Hub
	hubOpts.NoNodes = true
	if hubOpts.Controllers == nil {
		hubOpts.Controllers = HubControllers
	}
	all := map[string]Options{"hub": hubOpts}
	for _, name := range opts.Members {
		all[name] = opts.Member
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for name, o := range all {
		o.EtcdServers, o.EtcdPrefix = f.etcdURL(), "/"+name+"/registry"
		o.Logf = prefixLogf(opts.Logf, name)
		wg.Go(func() {
			c, err := Start(ctx, o)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			case name == "hub":
				f.Hub = c
			default:
				f.Members[name] = c
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		logs, stopErr := f.Stop(true)
		return nil, errors.Join(fmt.Errorf("starting fleet: %w (logs kept in %s)", err, logs), stopErr)
	}
	f.StartTime = time.Since(start)
	opts.Logf("localcluster: fleet of a hub and %d members up in %s", len(opts.Members), f.StartTime.Round(100*time.Millisecond))
	return f, nil
}

func (f *Fleet) startEtcd(ctx context.Context) error {
	binDir := f.opts.Hub.BinDir
	if binDir == "" {
		var err error
		if binDir, err = ResolveBinDir(ctx, f.opts.Logf); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return err
	}
	f.dir = dir
	if err := os.WriteFile(filepath.Join(dir, stateMarker), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	var url string
	f.etcd, url, err = startEtcdProcess(binDir, filepath.Join(dir, "etcd"), filepath.Join(dir, "logs"), ports[0], ports[1], f.opts.Hub.ExtraFlags[Etcd])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return waitWhileRunning(ctx, "etcd health", []*process{f.etcd}, func(ctx context.Context) (bool, error) {
		return etcdHealthy(ctx, url)
	})
}

// etcdURL is the client URL of the fleet's etcd.
func (f *Fleet) etcdURL() string {
	for _, a := range f.etcd.args {
		if u, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
			return u
		}
	}
	return ""
}

func prefixLogf(logf func(string, ...any), name string) func(string, ...any) {
	return func(format string, args ...any) { logf(name+": "+format, args...) }
}

// Member returns the member of that name; it panics on a name StartFleet was not given, a
// mistake in the test itself.
func (f *Fleet) Member(name string) *Cluster {
	m, ok := f.Members[name]
	if !ok {
		panic(fmt.Sprintf("localcluster: no member %q in the fleet", name))
	}
	return m
}

// Stop stops the members, then the hub, then the etcd they share, and removes their working
// directories. With keepLogs the logs are first moved under FleetOptions.KeepLogsDir (or a new
// temporary directory), one subdirectory per cluster, and that path is returned.
func (f *Fleet) Stop(keepLogs bool) (string, error) {
	f.stopOnce.Do(func() {
		dst := f.opts.KeepLogsDir
		var errs []error
		if keepLogs && dst == "" {
			var err error
			if dst, err = os.MkdirTemp("", "kubectl-workload-logs-"); err != nil {
				errs = append(errs, err)
				keepLogs = false
			}
		}
		stop := func(name string, c *Cluster) {
			if c == nil {
				return
			}
			c.opts.KeepLogsDir = filepath.Join(dst, name)
			_, err := c.Stop(keepLogs)
			errs = append(errs, err)
		}
		for _, name := range f.Names {
			stop(name, f.Members[name])
		}
		stop("hub", f.Hub)
		if f.etcd != nil {
			f.etcd.stop(15 * time.Second)
		}
		if f.dir != "" {
			if keepLogs && f.etcd != nil {
				errs = append(errs, os.MkdirAll(dst, 0o755), os.Rename(filepath.Join(f.dir, "logs", Etcd+".log"), filepath.Join(dst, Etcd+".log")))
			}
			errs = append(errs, os.RemoveAll(f.dir))
		}
		if keepLogs {
			f.stopLogs = dst
		}
		f.stopErr = errors.Join(errs...)
	})
	return f.stopLogs, f.stopErr
}
