package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	// Hub configures the hub. It never runs nodes (NoNodes is forced) and starts the etcd that
	// every member shares; Controllers nil means HubControllers.
	Hub Options
	// Members names the member clusters, e.g. "member-1"; each is started from Member.
	Members []string
	// Member configures every member: a full cluster with nodes. EtcdServers and EtcdPrefix are
	// set by StartFleet (the hub's etcd, /<member name>/registry).
	Member Options
	// KeepLogsDir is where Stop moves the logs it is asked to keep, one subdirectory per cluster
	// (hub, then each member's name); empty means a new temporary directory.
	KeepLogsDir string
	// Logf reports progress; nil means standard error.
	Logf func(format string, args ...any)
}

// Fleet is a hub and its members, each a control plane of its own (its own API server, CA,
// tokens and, for members, kube-controller-manager, kube-scheduler and kwok), all stored in the
// hub's etcd under a prefix per API server.
type Fleet struct {
	Hub     *Cluster
	Members map[string]*Cluster
	// Names are the members' names in the order given.
	Names []string
	// StartTime is how long StartFleet took once the binaries existed.
	StartTime time.Duration

	opts     FleetOptions
	stopOnce sync.Once
	stopLogs string
	stopErr  error
}

// StartFleet starts the hub, then the members side by side (their start is mostly waiting), and
// waits until every one is usable (see Start). On error nothing is left running.
func StartFleet(ctx context.Context, opts FleetOptions) (*Fleet, error) {
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	if len(opts.Members) == 0 {
		return nil, errors.New("localcluster: a fleet needs at least one member")
	}
	f := &Fleet{Members: map[string]*Cluster{}, Names: opts.Members, opts: opts}
	start := time.Now()
	hubOpts := opts.Hub
	hubOpts.NoNodes, hubOpts.EtcdServers, hubOpts.EtcdPrefix = true, "", ""
	if hubOpts.Controllers == nil {
		hubOpts.Controllers = HubControllers
	}
	hubOpts.Logf = prefixLogf(opts.Logf, "hub")
	hub, err := Start(ctx, hubOpts)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	f.Hub = hub

	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(opts.Members))
	for i, name := range opts.Members {
		mOpts := opts.Member
		mOpts.EtcdServers, mOpts.EtcdPrefix = hub.EtcdURL(), "/"+name+"/registry"
		mOpts.Logf = prefixLogf(opts.Logf, name)
		wg.Go(func() {
			m, err := Start(ctx, mOpts)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", name, err)
				return
			}
			mu.Lock()
			f.Members[name] = m
			mu.Unlock()
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

// Stop stops the members, then the hub (whose etcd they share), and removes their working
// directories. With keepLogs the logs are first moved under FleetOptions.KeepLogsDir (or a new
// temporary directory), one subdirectory per cluster, and that path is returned.
func (f *Fleet) Stop(keepLogs bool) (string, error) {
	f.stopOnce.Do(func() {
		dst := f.opts.KeepLogsDir
		if keepLogs && dst == "" {
			var err error
			if dst, err = os.MkdirTemp("", "kubectl-workload-logs-"); err != nil {
				f.stopErr = err
				keepLogs = false
			}
		}
		var errs []error
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
		if keepLogs {
			f.stopLogs = dst
		}
		f.stopErr = errors.Join(append(errs, f.stopErr)...)
	})
	return f.stopLogs, f.stopErr
}
