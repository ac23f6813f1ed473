package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	workloadfake "github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

// testTimeout bounds every wait of these tests; waits end as soon as their condition holds.
const testTimeout = 30 * time.Second

// testController enqueues the managed pods it sees and "reconciles" them by recording a metric and
// an event, as a real controller does.
type testController struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[string]
	pods      corelisters.PodLister
	synced    cache.InformerSynced
	tappsSync cache.InformerSynced
	recorder  func(string) interface{}

	started     chan struct{} // closed when Run starts
	processed   chan string   // every key reconciled
	stopped     chan struct{} // closed when Run returns
	workers     atomic.Int32
	syncedAtRun bool
	returnEarly bool
}

func newTestController(name string) *testController {
	return &testController{
		name:      name,
		started:   make(chan struct{}),
		processed: make(chan string, 100),
		stopped:   make(chan struct{}),
	}
}

func (c *testController) init(cc *Context) (Controller, error) {
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: c.name})
	pods := cc.ManagedInformers.Pods()
	c.pods = pods.Lister()
	c.synced = pods.Informer().HasSynced
	c.tappsSync = cc.Informers.Apps().V1alpha1().TApps().Informer().HasSynced
	_, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				c.queue.Add(key)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if cc.Workers != 3 || cc.EventRecorder == nil || cc.ManagedSelector != ManagedSelector {
		return nil, fmt.Errorf("unexpected context %+v", cc)
	}
	rec := cc.EventRecorder("test-controller")
	c.recorder = func(key string) interface{} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: "ns"}}
		rec.Event(p, corev1.EventTypeNormal, "Reconciled", key)
		return nil
	}
	return c, nil
}

func (c *testController) Run(ctx context.Context, workers int) {
	defer close(c.stopped)
	c.syncedAtRun = c.synced() && c.tappsSync()
	close(c.started)
	if c.returnEarly {
		return
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			c.workers.Add(1)
			for c.next() {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *testController) next() bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	start := time.Now()
	c.recorder(key)
	metrics.ObserveReconcile(c.name, start, nil)
	c.queue.Forget(key)
	c.processed <- key
	return true
}

// testAgent is an agent on fake clients, with its HTTP servers on loopback.
type testAgent struct {
	*Agent
	kube   *kubefake.Clientset
	ctrl   *testController
	cancel context.CancelFunc
	done   chan error
}

func newTestAgent(t *testing.T, name string, mutate func(*Options)) *testAgent {
	t.Helper()
	kube := kubefake.NewClientset()
	c := newTestController(name)
	opts := NewOptions()
	opts.LeaderElect = false
	opts.Workers = 3
	opts.HealthAddr = "127.0.0.1:0"
	opts.MetricsAddr = "127.0.0.1:0"
	opts.Registry = map[string]InitFunc{name: c.init}
	if mutate != nil {
		mutate(opts)
	}
	a, err := New(opts, &Clients{Kube: kube, Client: workloadfake.NewSimpleClientset()})
	if err != nil {
		t.Fatal(err)
	}
	return &testAgent{Agent: a, kube: kube, ctrl: c}
}

func (ta *testAgent) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ta.cancel = cancel
	ta.done = make(chan error, 1)
	go func() { ta.done <- ta.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ta.done:
		case <-time.After(testTimeout):
			t.Error("agent did not stop")
		}
	})
}

// stop cancels the agent's context and returns what Run returned.
func (ta *testAgent) stop(t *testing.T) error {
	t.Helper()
	ta.cancel()
	select {
	case err := <-ta.done:
		ta.done <- err // for the cleanup
		return err
	case <-time.After(testTimeout):
		t.Fatal("Run did not return after the context was cancelled")
		return nil
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func managedPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: managedLabels()}}
}

func TestRunWithoutLeaderElection(t *testing.T) {
	ta := newTestAgent(t, "test-run", nil)
	if _, err := ta.kube.CoreV1().Pods("ns").Create(context.Background(), managedPod("p1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ta.start(t)
	waitClosed(t, ta.ctrl.started, "the controller to start")
	if !ta.ctrl.syncedAtRun {
		t.Error("controller ran before its informers synced")
	}
	select {
	case key := <-ta.ctrl.processed:
		if key != "ns/p1" {
			t.Errorf("processed %q", key)
		}
	case <-time.After(testTimeout):
		t.Fatal("the managed pod was never reconciled")
	}
	if code, body := get(t, "http://"+ta.HealthAddr()+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz while running: %d %s", code, body)
	}
	if code, _ := get(t, "http://"+ta.HealthAddr()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}

	if err := ta.stop(t); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	waitClosed(t, ta.ctrl.stopped, "the controller to return")
	if !ta.ctrl.queue.ShuttingDown() {
		t.Error("the controller's queue was not shut down")
	}
	if ta.Phase() != PhaseStopping {
		t.Errorf("phase after stop: %s", ta.Phase())
	}
	// The servers are shut down.
	if _, err := http.Get("http://" + ta.HealthAddr() + "/healthz"); err == nil {
		t.Error("health server still serving after Run returned")
	}
}

var metricsTestRuns atomic.Int32

func TestMetricsEndpoint(t *testing.T) {
	// A queue name of its own per run: the registry is global and -count may exceed 1.
	name := fmt.Sprintf("test-metrics-%d", metricsTestRuns.Add(1))
	ta := newTestAgent(t, name, nil)
	ta.start(t)
	waitClosed(t, ta.ctrl.started, "the controller to start")
	if _, err := ta.kube.CoreV1().Pods("ns").Create(context.Background(), managedPod("m1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ta.ctrl.processed:
	case <-time.After(testTimeout):
		t.Fatal("the managed pod was never reconciled")
	}
	code, body := get(t, "http://"+ta.MetricsAddr()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`workload_agent_reconcile_total{controller="` + name + `",result="success"} 1`,
		`workload_agent_reconcile_duration_seconds_count{controller="` + name + `"} 1`,
		`workqueue_depth{name="` + name + `"} 0`,
		`workqueue_adds_total{name="` + name + `"} 1`,
		`workqueue_queue_duration_seconds_count{name="` + name + `"} 1`,
		`workqueue_work_duration_seconds_count{name="` + name + `"}`,
		`workqueue_unfinished_work_seconds{name="` + name + `"}`,
		`workqueue_longest_running_processor_seconds{name="` + name + `"}`,
		`workqueue_retries_total{name="` + name + `"} 0`,
		"workload_agent_leader 1",
		"workload_agent_caches_synced 1",
		"workload_agent_build_info{",
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "\nworkqueue_depth{name=\"\"}") {
		t.Error("a queue without a name reports metrics")
	}
	if err := ta.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestHealthAndReadyPhases(t *testing.T) {
	s := &status{phase: PhaseStarting}
	mux := http.NewServeMux()
	s.healthHandler(mux)
	serve := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	for _, c := range []struct {
		phase Phase
		ready bool
	}{
		{PhaseStarting, false}, {PhaseStandby, true}, {PhaseSyncing, false}, {PhaseRunning, true}, {PhaseStopping, false},
	} {
		s.set(c.phase)
		code, body := serve("/readyz")
		if (code == http.StatusOK) != c.ready {
			t.Errorf("/readyz in %s: %d %q", c.phase, code, body)
		}
		if !c.ready && !strings.Contains(body, string(c.phase)) {
			t.Errorf("/readyz in %s does not say why: %q", c.phase, body)
		}
		// Liveness does not depend on the phase.
		if code, body := serve("/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("/healthz in %s: %d %q", c.phase, code, body)
		}
	}
	if code, _ := serve("/livez"); code != http.StatusOK {
		t.Errorf("/livez: %d", code)
	}

	// With a leader election watchdog that has no elector yet, liveness holds.
	s.watchdog = leaderelection.NewLeaderHealthzAdaptor(time.Second)
	if code, _ := serve("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with an idle watchdog: %d", code)
	}
}

func TestHealthAndMetricsOnOneAddress(t *testing.T) {
	opts := NewOptions()
	opts.LeaderElect = false
	opts.Registry = map[string]InitFunc{}
	// Find a free port, then ask for the same address for both servers.
	probe, err := New(&Options{QPS: 1, Burst: 1, Workers: 1, GCPercent: DefaultGCPercent, HealthAddr: "127.0.0.1:0", MetricsAddr: "0"},
		&Clients{Kube: kubefake.NewClientset(), Client: workloadfake.NewSimpleClientset()})
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.HealthAddr()
	probe.closeServers()
	opts.HealthAddr, opts.MetricsAddr = addr, addr
	a, err := New(opts, &Clients{Kube: kubefake.NewClientset(), Client: workloadfake.NewSimpleClientset()})
	if err != nil {
		t.Fatalf("one address for both: %v", err)
	}
	if a.HealthAddr() != a.MetricsAddr() || len(a.servers) != 1 {
		t.Fatalf("health %s metrics %s servers %d", a.HealthAddr(), a.MetricsAddr(), len(a.servers))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, testTimeout, true, func(context.Context) (bool, error) {
		return a.Phase() == PhaseRunning, nil
	}); err != nil {
		t.Fatalf("never running: %v", err)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _ := get(t, "http://"+addr+path); code != http.StatusOK {
			t.Errorf("%s: %d", path, code)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDisabledEndpoints(t *testing.T) {
	ta := newTestAgent(t, "test-disabled", func(o *Options) { o.HealthAddr, o.MetricsAddr = "0", "0" })
	if ta.HealthAddr() != "" || ta.MetricsAddr() != "" || len(ta.servers) != 0 {
		t.Fatalf("servers bound though disabled: %q %q", ta.HealthAddr(), ta.MetricsAddr())
	}
	ta.start(t)
	waitClosed(t, ta.ctrl.started, "the controller to start")
	if err := ta.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestPortInUse(t *testing.T) {
	ta := newTestAgent(t, "test-port", nil)
	defer ta.closeServers()
	opts := NewOptions()
	opts.LeaderElect = false
	opts.Registry = map[string]InitFunc{}
	opts.HealthAddr = ta.HealthAddr()
	opts.MetricsAddr = "0"
	if _, err := New(opts, &Clients{Kube: kubefake.NewClientset(), Client: workloadfake.NewSimpleClientset()}); err == nil ||
		!strings.Contains(err.Error(), "health") {
		t.Errorf("binding a used port: %v", err)
	}
}

func TestControllerInitError(t *testing.T) {
	opts := NewOptions()
	opts.LeaderElect = false
	opts.HealthAddr, opts.MetricsAddr = "0", "0"
	opts.Registry = map[string]InitFunc{"broken": func(*Context) (Controller, error) { return nil, errors.New("no good") }}
	a, err := New(opts, &Clients{Kube: kubefake.NewClientset(), Client: workloadfake.NewSimpleClientset()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.Run(ctx); err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "no good") {
		t.Errorf("Run with a failing controller: %v", err)
	}
}

func TestControllerReturningEarlyIsAnError(t *testing.T) {
	ta := newTestAgent(t, "test-early", nil)
	ta.ctrl.returnEarly = true
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	err := ta.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "test-early stopped unexpectedly") {
		t.Errorf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Error("Run returned only because the test timed out")
	}
}

func TestControllerSkippedWhenInitReturnsNil(t *testing.T) {
	c := newTestController("test-skip-runs")
	opts := NewOptions()
	opts.LeaderElect = false
	opts.Workers = 3
	opts.HealthAddr, opts.MetricsAddr = "0", "0"
	opts.Registry = map[string]InitFunc{
		"skipped": func(*Context) (Controller, error) { return nil, nil },
		"runs":    c.init,
	}
	opts.EnabledControllers = []string{"*"}
	a, err := New(opts, &Clients{Kube: kubefake.NewClientset(), Client: workloadfake.NewSimpleClientset()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitClosed(t, c.started, "the other controller to start")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Leader election, on the fake clientset's Lease.

func leaderOpts(o *Options) {
	o.LeaderElect = true
	o.LeaderElectNamespace = "workload-system"
	o.LeaderElectID = "test-lease"
	o.LeaseDuration = 3 * time.Second
	o.RenewDeadline = 2 * time.Second
	o.RetryPeriod = 100 * time.Millisecond
}

func getLease(t *testing.T, ta *testAgent) *coordinationv1.Lease {
	t.Helper()
	l, err := ta.kube.CoordinationV1().Leases("workload-system").Get(context.Background(), "test-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	return l
}

func TestLeaderElection(t *testing.T) {
	ta := newTestAgent(t, "test-leader", leaderOpts)
	ta.start(t)
	waitClosed(t, ta.ctrl.started, "the controller to start as leader")
	holder := ptr.Deref(getLease(t, ta).Spec.HolderIdentity, "")
	if holder == "" {
		t.Fatal("controllers run but the Lease has no holder")
	}
	code, body := get(t, "http://"+ta.MetricsAddr()+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "workload_agent_leader 1") {
		t.Errorf("leader gauge not 1 while leading")
	}
	if code, body := get(t, "http://"+ta.HealthAddr()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while leading: %d %s", code, body)
	}

	if err := ta.stop(t); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	waitClosed(t, ta.ctrl.stopped, "the controller to return")
	if h := ptr.Deref(getLease(t, ta).Spec.HolderIdentity, ""); h != "" {
		t.Errorf("Lease still held by %q after a graceful stop (ReleaseOnCancel)", h)
	}
}

func TestStandbyDoesNotRunControllers(t *testing.T) {
	ta := newTestAgent(t, "test-standby", leaderOpts)
	now := metav1.NewMicroTime(time.Now())
	other := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "workload-system", Name: "test-lease"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("someone-else"),
			LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	if _, err := ta.kube.CoordinationV1().Leases("workload-system").Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ta.start(t)
	// Wait until the agent has looked at the Lease at least twice.
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, testTimeout, true, func(context.Context) (bool, error) {
		gets := 0
		for _, a := range ta.kube.Actions() {
			if a.GetResource().Resource == "leases" && a.GetVerb() == "get" {
				gets++
			}
		}
		return gets >= 2, nil
	}); err != nil {
		t.Fatalf("the agent never tried the Lease: %v", err)
	}
	if ta.Phase() != PhaseStandby {
		t.Errorf("phase %s, want standby", ta.Phase())
	}
	if code, body := get(t, "http://"+ta.HealthAddr()+"/readyz"); code != http.StatusOK || !strings.Contains(body, "standby") {
		t.Errorf("/readyz on standby: %d %q", code, body)
	}
	if err := ta.stop(t); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	select {
	case <-ta.ctrl.started:
		t.Error("a standby ran its controllers")
	default:
	}
	if h := ptr.Deref(getLease(t, ta).Spec.HolderIdentity, ""); h != "someone-else" {
		t.Errorf("standby changed the Lease holder to %q", h)
	}
}

func TestLosingTheLeaseStopsWithError(t *testing.T) {
	ta := newTestAgent(t, "test-lost", leaderOpts)
	// The API server will stop accepting renewals (the fake clientset does not check resource
	// versions, so a competing holder cannot be simulated by an update). Reactors must be
	// installed before the clientset is used.
	var unreachable atomic.Bool
	ta.kube.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if unreachable.Load() {
			return true, nil, errors.New("injected: API server unreachable")
		}
		return false, nil, nil
	})
	ta.start(t)
	waitClosed(t, ta.ctrl.started, "the controller to start as leader")
	unreachable.Store(true)
	select {
	case err := <-ta.done:
		ta.done <- err
		if !errors.Is(err, ErrLeadershipLost) {
			t.Errorf("Run after losing the Lease: %v, want ErrLeadershipLost", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Run did not return after the Lease was lost")
	}
	waitClosed(t, ta.ctrl.stopped, "the controller to return")
	if ExitCode(ErrLeadershipLost) == 0 {
		t.Error("exit code 0 on a lost Lease")
	}
}

// --profiling serves Go's heap profile beside /metrics; without it, no profile is served.
func TestProfilingEndpoint(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		t.Run(fmt.Sprint(profiling), func(t *testing.T) {
			ta := newTestAgent(t, "test-profiling", func(o *Options) { o.Profiling = profiling })
			ta.start(t)
			if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, testTimeout, true, func(context.Context) (bool, error) {
				return ta.Phase() == PhaseRunning, nil
			}); err != nil {
				t.Fatalf("never running: %v", err)
			}
			code, body := get(t, "http://"+ta.MetricsAddr()+"/debug/pprof/heap?debug=1")
			served := code == http.StatusOK && strings.Contains(body, "heap profile")
			if served != profiling {
				t.Errorf("profiling %v: /debug/pprof/heap answered %d (heap profile served: %v)", profiling, code, served)
			}
		})
	}
}
