package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	"github.com/kubectl-workload/kubectl-workload/pkg/agent/fence"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"

	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	workloadscheme "github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/scheme"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
	"github.com/kubectl-workload/kubectl-workload/pkg/version"
)

// Component is the agent's event source and user agent name.
const Component = "workload-agent"

// ErrLeadershipLost is returned by Run when the agent stopped holding the leader Lease while it
// was not asked to stop. The process should exit non-zero; its restart rejoins the election.
var ErrLeadershipLost = errors.New("leader election lost")

// shutdownTimeout bounds the graceful shutdown of the HTTP servers.
const shutdownTimeout = 5 * time.Second

// Scheme knows the native types and the agent's API group; event recorders use it to reference
// the objects events are about.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(kubescheme.AddToScheme(Scheme))
	utilruntime.Must(workloadscheme.AddToScheme(Scheme))
}

// Clients are the API clients the agent uses.
type Clients struct {
	// Kube is for native objects (and events).
	Kube kubeclient.Interface
	// Client is for the agent's own API group.
	Client versioned.Interface
	// Status is for the status writes of the agent's own kinds: the same API group as Client,
	// through a rate limiter of its own (--status-qps, --status-burst), so that a workload's
	// status is never queued behind the pod writes of a scale-out. Nil means Client.
	Status versioned.Interface
	// Gateway is for gateway.networking.k8s.io (a Canary's HTTPRoute); nil: no traffic routing.
	Gateway gatewayclient.GatewayV1Interface
	// LeaderElection is for the Lease; nil means Kube. It has its own rate limiter and a short
	// timeout so that renewals neither queue behind controller traffic nor hang. It is not
	// fenced: it is what keeps the fence open.
	LeaderElection kubeclient.Interface
	// Fence guards every write of Kube and Client (their transports refuse writes while it is
	// closed); it opens while this agent holds the leader Lease. Nil: a fence the agent makes
	// itself, which only stops the controllers (clients built elsewhere, as in tests).
	Fence *fence.Fence
}

// RESTConfig returns the API server configuration: the kubeconfig file when one is given,
// else the in-cluster configuration, else clientcmd's default loading rules ($KUBECONFIG,
// ~/.kube/config).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, inClusterErr := rest.InClusterConfig()
	if inClusterErr == nil {
		return cfg, nil
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no API server configuration: not in a cluster (%v) and no usable kubeconfig (%w); use --kubeconfig", inClusterErr, err)
	}
	return cfg, nil
}

// NewClients builds the API clients from the options: --kubeconfig, --qps and --burst. The
// native client speaks protobuf. The native and the workload client share one rate limiter, so
// --qps bounds the agent's writes of pods and other children, its spec writes and its Events;
// the status writes of its own kinds have their own (--status-qps, docs/architecture.md, "Two
// client budgets"), and so has leader election.
func NewClients(opts *Options) (*Clients, error) {
	cfg, err := RESTConfig(opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = UserAgent(opts.Identity)
	cfg.QPS = opts.QPS
	cfg.Burst = opts.Burst
	leCfg := rest.CopyConfig(cfg)

	writes := fence.Open()
	if opts.LeaderElect {
		writes = fence.New(nil)
	}
	shared := rest.CopyConfig(cfg)
	shared.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(opts.QPS, opts.Burst)
	shared.Wrap(writes.Transport)

	kubeCfg := rest.CopyConfig(shared)
	kubeCfg.ContentType = runtime.ContentTypeProtobuf
	kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubeclient.New(kubeCfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	client, err := versioned.NewForConfig(shared)
	if err != nil {
		return nil, fmt.Errorf("workload client: %w", err)
	}
	statusCfg := rest.CopyConfig(cfg)
	statusCfg.QPS, statusCfg.Burst = opts.statusBudget()
	statusCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(statusCfg.QPS, statusCfg.Burst)
	statusCfg.Wrap(writes.Transport)
	status, err := versioned.NewForConfig(statusCfg)
	if err != nil {
		return nil, fmt.Errorf("status client: %w", err)
	}

	leCfg.ContentType, leCfg.AcceptContentTypes = kubeCfg.ContentType, kubeCfg.AcceptContentTypes
	if opts.RenewDeadline > 0 {
		leCfg.Timeout = opts.RenewDeadline / 2
	}
	le, err := kubeclient.New(leCfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	gateway, err := gatewayclient.NewForConfig(shared)
	if err != nil {
		return nil, fmt.Errorf("gateway API client: %w", err)
	}
	return &Clients{Kube: kube, Client: client, Status: status, Gateway: gateway, LeaderElection: le, Fence: writes}, nil
}

// UserAgent is the agent's User-Agent: the program and version, the platform and, when known,
// the leader election identity, so that an audit log tells two agents apart.
func UserAgent(identity string) string {
	ua := fmt.Sprintf("%s/%s (%s/%s)", Component, version.Version, goruntime.GOOS, goruntime.GOARCH)
	if identity != "" {
		ua += " identity/" + identity
	}
	return ua
}

// Run runs the agent with the options until ctx is done: the soft memory limit
// (--memory-limit), GOGC (--gc-percent), NewClients, New, Agent.Run.
func Run(ctx context.Context, opts *Options) error {
	mem, err := applyMemoryLimit(opts.MemoryLimit)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Go soft memory limit", "bytes", debug.SetMemoryLimit(-1), "source", mem.source)
	klog.FromContext(ctx).Info("Go GC percent", "source", applyGCPercent(opts.GCPercent))
	clients, err := NewClients(opts)
	if err != nil {
		return err
	}
	a, err := New(opts, clients)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// Agent is one run of the agent. Create it with New, run it with Run (once).
type Agent struct {
	opts    *Options
	clients *Clients
	enabled []string

	status  status
	servers []*server

	healthAddr, metricsAddr string
}

// New validates the options and binds the HTTP listeners (so that a port in use fails here),
// without serving yet.
func New(opts *Options, clients *Clients) (*Agent, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	enabled, err := opts.Enabled()
	if err != nil {
		return nil, err
	}
	if clients.LeaderElection == nil || clients.Fence == nil {
		c := *clients
		if c.LeaderElection == nil {
			c.LeaderElection = clients.Kube
		}
		if c.Fence == nil {
			c.Fence = fence.Open()
			if opts.LeaderElect {
				c.Fence = fence.New(nil)
			}
		}
		clients = &c
	}
	a := &Agent{opts: opts, clients: clients, enabled: enabled}
	a.status.phase = PhaseStarting
	if opts.LeaderElect {
		a.status.watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}

	bind := func(name, addr string, register func(*http.ServeMux)) (string, error) {
		mux := http.NewServeMux()
		register(mux)
		s, err := listen(name, addr, mux)
		if err != nil {
			return "", err
		}
		a.servers = append(a.servers, s)
		return s.ln.Addr().String(), nil
	}
	switch {
	case opts.HealthAddr != DisabledAddr && opts.HealthAddr == opts.MetricsAddr && !zeroPort(opts.HealthAddr):
		addr, err := bind("health and metrics", opts.HealthAddr, func(mux *http.ServeMux) {
			a.status.healthHandler(mux)
			metricsHandler(opts.Profiling)(mux)
		})
		if err != nil {
			return nil, err
		}
		a.healthAddr, a.metricsAddr = addr, addr
	default:
		if opts.HealthAddr != DisabledAddr {
			if a.healthAddr, err = bind("health", opts.HealthAddr, a.status.healthHandler); err != nil {
				return nil, err
			}
		}
		if opts.MetricsAddr != DisabledAddr {
			if a.metricsAddr, err = bind("metrics", opts.MetricsAddr, metricsHandler(opts.Profiling)); err != nil {
				a.closeServers()
				return nil, err
			}
		}
	}
	return a, nil
}

func zeroPort(addr string) bool {
	return len(addr) >= 2 && addr[len(addr)-2:] == ":0"
}

// HealthAddr is the address /healthz and /readyz are served on ("" when disabled).
func (a *Agent) HealthAddr() string { return a.healthAddr }

// MetricsAddr is the address /metrics is served on ("" when disabled).
func (a *Agent) MetricsAddr() string { return a.metricsAddr }

// Phase is the agent's current phase (what /readyz reports).
func (a *Agent) Phase() Phase { return a.status.get() }

func (a *Agent) closeServers() {
	for _, s := range a.servers {
		s.close()
	}
}

// Run serves the HTTP endpoints and runs the controllers (after winning leader election, when
// enabled) until ctx is done, then stops the controllers, waits for them to drain, releases the
// Lease and shuts the servers down. It returns nil after a requested stop, ErrLeadershipLost when
// the Lease was lost, or the error that stopped the controllers.
func (a *Agent) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	for _, s := range a.servers {
		go s.serve()
	}
	defer func() {
		a.status.set(PhaseStopping)
		for _, s := range a.servers {
			s.shutdown(shutdownTimeout)
		}
	}()

	// Events are sent until Run returns, including while controllers drain after ctx is done.
	broadcaster := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	broadcaster.StartStructuredLogging(4)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.clients.Kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := func(component string) record.EventRecorder {
		return broadcaster.NewRecorder(Scheme, corev1.EventSource{Component: component})
	}

	logger.Info("Starting workload-agent", "version", version.Get().String(), "namespace", namespaceOrAll(a.opts.Namespace),
		"controllers", a.enabled, "workers", a.opts.Workers, "leaderElect", a.opts.LeaderElect, "identity", a.opts.Identity)
	if !a.opts.LeaderElect {
		metrics.SetLeader(true)
		defer metrics.SetLeader(false)
		return a.lead(ctx, recorder)
	}
	return a.runElected(ctx, recorder)
}

func namespaceOrAll(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}

// runElected runs leader election and leads while it holds the Lease.
//
// Order matters for ReleaseOnCancel: the Lease is released only after the controllers have
// stopped, so two agents never act at once. On a stop request the controllers are cancelled
// first (through ctx), and the leader election context is cancelled when they have drained.
func (a *Agent) runElected(ctx context.Context, recorder func(string) record.EventRecorder) error {
	logger := klog.FromContext(ctx)
	identity := a.opts.Identity
	if identity == "" {
		identity = NewIdentity()
	}
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()

	el := &election{leadingDone: make(chan struct{})}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            a.leaseLock(logger, identity, recorder),
		Name:            a.opts.LeaderElectID,
		LeaseDuration:   a.opts.LeaseDuration,
		RenewDeadline:   a.opts.RenewDeadline,
		RetryPeriod:     a.opts.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        a.status.watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				if !el.start(ctx) {
					leCancel()
					return
				}
				defer close(el.leadingDone)
				defer leCancel() // after the controllers stopped: release the Lease
				logger.Info("Became the leader", "identity", identity, "lease", a.opts.LeaderElectNamespace+"/"+a.opts.LeaderElectID)
				el.setErr(a.leadFenced(ctx, lctx, recorder))
			},
			OnStoppedLeading: func() {
				metrics.SetLeader(false)
			},
			OnNewLeader: func(current string) {
				if current != identity {
					logger.Info("Standing by; another agent leads", "leader", current)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	if a.status.watchdog != nil {
		a.status.watchdog.SetLeaderElection(le)
	}

	a.status.set(PhaseStandby)
	logger.Info("Waiting to acquire the leader Lease", "lease", a.opts.LeaderElectNamespace+"/"+a.opts.LeaderElectID, "identity", identity)
	leDone := make(chan struct{})
	go func() {
		defer close(leDone)
		le.Run(leCtx)
	}()

	select {
	case <-ctx.Done():
		if !el.leading() {
			leCancel()
		}
		<-leDone
	case <-leDone:
	}
	if el.finish() {
		<-el.leadingDone
	}
	switch err := el.err(); {
	case err != nil:
		return err
	case ctx.Err() == nil:
		return ErrLeadershipLost
	}
	logger.Info("Stopped")
	return nil
}

// election is what runElected's callbacks and its wait share.
type election struct {
	mu          sync.Mutex
	started     bool // OnStartedLeading began leading
	finished    bool // the elector returned; too late to start leading
	leadErr     error
	leadingDone chan struct{}
}

// start reports whether leading may begin (not stopping, elector still running) and marks it begun.
func (e *election) start(ctx context.Context) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ctx.Err() != nil || e.finished {
		return false
	}
	e.started = true
	return true
}

func (e *election) leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

// finish marks the elector returned and reports whether leading had begun.
func (e *election) finish() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finished = true
	return e.started
}

func (e *election) setErr(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leadErr = err
}

func (e *election) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leadErr
}

// leaseLock is the leader election Lock on the Lease, wrapped by the agent's write fence so that
// the fence follows the Lease (see package fence).
func (a *Agent) leaseLock(logger klog.Logger, identity string, recorder func(string) record.EventRecorder) resourcelock.Interface {
	writes := a.clients.Fence
	writes.OnChange(func(open bool) {
		if open {
			logger.V(2).Info("Write fence opened: this agent wrote the leader Lease")
		} else {
			logger.Info("Write fence closed: writes refused until this agent renews the leader Lease")
		}
	})
	return writes.Lock(&resourcelock.LeaseLock{
		LeaseMeta: metav1.ObjectMeta{Namespace: a.opts.LeaderElectNamespace, Name: a.opts.LeaderElectID},
		Client:    a.clients.LeaderElection.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{
			Identity:      identity,
			EventRecorder: recorder(Component),
		},
	})
}

// leadFenced leads until a stop request (ctx), the loss of the Lease (lctx) or, sooner, the
// write fence closing: the Lease was not renewed in time for this agent to be sure it still
// holds it, so its controllers stop at once rather than at the renew deadline.
func (a *Agent) leadFenced(ctx, lctx context.Context, recorder func(string) record.EventRecorder) error {
	metrics.SetLeader(true)
	defer metrics.SetLeader(false)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(lctx, cancel)
	defer stop()
	stopFenced := context.AfterFunc(a.clients.Fence.Term(), cancel)
	defer stopFenced()
	return a.lead(wctx, recorder)
}

// NewIdentity returns a leader election identity: the host name and a new UUID.
func NewIdentity() string {
	hostname, err := os.Hostname()
	if err != nil || hostname == "" {
		hostname = "workload-agent"
	}
	return hostname + "_" + string(uuid.NewUUID())
}

// lead builds the informer factories and the enabled controllers, starts the factories, waits
// for their caches and runs the controllers until ctx is done.
func (a *Agent) lead(ctx context.Context, recorder func(string) record.EventRecorder) error {
	logger := klog.FromContext(ctx)
	a.status.set(PhaseSyncing)

	factories := NewFactories(a.clients.Kube, a.clients.Client, a.opts.Namespace, a.opts.ResyncPeriod)
	if a.clients.Gateway != nil && servesHTTPRoutes(a.clients.Kube) {
		factories.EnableGateway(a.clients.Kube, a.opts.Namespace, a.opts.ResyncPeriod)
	}
	controllers, err := a.initControllers(ctx, factories, recorder)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		factories.Shutdown()
	}()
	factories.Start(ctx.Done())
	logger.Info("Waiting for informer caches to sync")
	unsynced := factories.WaitForCacheSync(ctx.Done())
	if ctx.Err() != nil {
		return nil
	}
	if len(unsynced) > 0 {
		return fmt.Errorf("informer caches did not sync: %v", unsynced)
	}
	metrics.SetCachesSynced(true)
	defer metrics.SetCachesSynced(false)
	a.status.set(PhaseRunning)
	logger.Info("Caches synced; running controllers", "count", len(controllers))

	var wg sync.WaitGroup
	stopped := make(chan string, len(controllers))
	for _, c := range controllers {
		wg.Go(func() {
			defer func() { stopped <- c.name }()
			c.c.Run(klog.NewContext(ctx, logger.WithValues("controller", c.name)), a.opts.Workers)
		})
	}
	select {
	case <-ctx.Done():
	case name := <-stopped:
		if ctx.Err() == nil {
			err = fmt.Errorf("controller %s stopped unexpectedly", name)
			logger.Error(err, "Stopping the other controllers")
		}
	}
	a.status.set(PhaseStopping)
	cancel()
	wg.Wait()
	logger.Info("Controllers stopped")
	return err
}

// namedController is an enabled controller and its name.
type namedController struct {
	name string
	c    ctrl.Controller
}

// initControllers builds the enabled controllers on the factories (their InitFuncs ask for the
// informers they need).
func (a *Agent) initControllers(ctx context.Context, factories *Factories, recorder func(string) record.EventRecorder) ([]namedController, error) {
	logger := klog.FromContext(ctx)
	cctx := &ctrl.Context{
		KubeClient:          a.clients.Kube,
		Client:              a.clients.Client,
		StatusClient:        a.clients.Status,
		GatewayClient:       a.clients.Gateway,
		GatewayInformers:    factories.Gateway,
		ManagedInformers:    factories.Managed,
		ReferencedInformers: factories.Referenced,
		ManagedSelector:     ManagedSelector,
		Informers:           factories.Workloads,
		EventRecorder:       recorder,
		Clock:               clock.RealClock{},
		Namespace:           a.opts.Namespace,
		AgentNamespace:      a.opts.LeaderElectNamespace,
		Fence:               a.clients.Fence,
		Workers:             a.opts.Workers,
		ResyncPeriod:        a.opts.ResyncPeriod,
	}
	var controllers []namedController
	registry := a.opts.registry()
	for _, name := range a.enabled {
		c, err := registry[name](cctx)
		if err != nil {
			return nil, fmt.Errorf("controller %s: %w", name, err)
		}
		if c == nil {
			logger.Info("Controller chose not to run", "controller", name)
			continue
		}
		controllers = append(controllers, namedController{name, c})
	}
	if len(controllers) == 0 {
		logger.Info("No controllers to run")
	}

	return controllers, nil
}
