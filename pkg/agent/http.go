package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

// Phase is where the agent is in its life; it decides /readyz.
type Phase string

// The agent's phases.
const (
	// PhaseStarting: the process is up but has not yet joined leader election.
	PhaseStarting Phase = "starting"
	// PhaseStandby: not the leader; waiting to acquire the Lease. Ready.
	PhaseStandby Phase = "standby"
	// PhaseSyncing: leading (or not electing) and waiting for the informer caches to sync.
	PhaseSyncing Phase = "syncing"
	// PhaseRunning: caches synced, controllers running. Ready.
	PhaseRunning Phase = "running"
	// PhaseStopping: shutting down.
	PhaseStopping Phase = "stopping"
)

// Ready reports whether /readyz answers 200 in this phase.
//
// The agent serves no traffic, so readiness only tells Kubernetes (and rollouts of the agent's
// Deployment) whether a replica is in the state it should be in. A leader is ready once its
// caches have synced and its controllers run. A standby is ready too: standing by is its job,
// and were it unready, a rolling update of a multi-replica agent would wait forever for a
// standby that cannot become leader while the old leader lives.
func (p Phase) Ready() bool {
	return p == PhaseStandby || p == PhaseRunning
}

// status holds the phase and the leader election watchdog for the health endpoints.
type status struct {
	mu       sync.Mutex
	phase    Phase
	watchdog *leaderelection.HealthzAdaptor
}

func (s *status) set(p Phase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != p {
		klog.V(2).InfoS("Agent phase", "phase", p)
	}
	s.phase = p
}

func (s *status) get() Phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase
}

// healthz is the liveness check: the process serves HTTP, and when leader election runs, the
// leader has not failed to renew its Lease for longer than the lease duration plus a grace
// period (the process should have exited then; if it did not, the kubelet restarts it).
func (s *status) healthz(w http.ResponseWriter, r *http.Request) {
	if s.watchdog != nil {
		if err := s.watchdog.Check(r); err != nil {
			http.Error(w, "leader election: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	writeText(w, http.StatusOK, "ok\n")
}

// readyz is the readiness check; see Phase.Ready.
func (s *status) readyz(w http.ResponseWriter, _ *http.Request) {
	p := s.get()
	if !p.Ready() {
		writeText(w, http.StatusServiceUnavailable, fmt.Sprintf("not ready: %s\n", p))
		return
	}
	writeText(w, http.StatusOK, fmt.Sprintf("ok: %s\n", p))
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

// HealthHandler serves /healthz and /readyz (and /livez, an alias of /healthz).
func (s *status) healthHandler(mux *http.ServeMux) {
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/livez", s.healthz)
	mux.HandleFunc("/readyz", s.readyz)
}

// metricsHandler serves metrics.Registry, and with profiling Go's profiles at /debug/pprof/ (off
// by default: a heap or CPU profile is for whoever measures the agent, not for every scraper).
func metricsHandler(profiling bool) func(mux *http.ServeMux) {
	return func(mux *http.ServeMux) {
		mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{
			ErrorLog:          promhttpLogger{},
			Registry:          metrics.Registry,
			EnableOpenMetrics: true,
		}))
		if profiling {
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
			mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		}
	}
}

type promhttpLogger struct{}

func (promhttpLogger) Println(v ...interface{}) {
	klog.ErrorS(nil, fmt.Sprint(v...), "handler", "metrics")
}

// server is one bound HTTP server.
type server struct {
	name string
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

func listen(name, addr string, handler http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	return &server{
		name: name,
		ln:   ln,
		srv: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       90 * time.Second,
		},
		done: make(chan struct{}),
	}, nil
}

func (s *server) serve() {
	defer close(s.done)
	klog.InfoS("Serving", "server", s.name, "address", s.ln.Addr().String())
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		klog.ErrorS(err, "HTTP server failed", "server", s.name)
	}
}

func (s *server) shutdown(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		klog.ErrorS(err, "HTTP server shutdown", "server", s.name)
		_ = s.srv.Close()
	}
	<-s.done
}

// close is for servers that never served.
func (s *server) close() {
	_ = s.ln.Close()
}
