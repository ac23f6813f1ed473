package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// releaseRun is one release by one controller (BenchmarkVsArgoRollouts).
type releaseRun struct {
	name   string
	client string // the controller's client name in the audit log
	pid    int    // the controller's process
	ns     string
	image  string // the released image
	start  func(context.Context) error
	done   func(context.Context) (bool, string, error)
	// paused and promote, when set: once paused says so, promote is sent.
	paused  func(context.Context) (bool, error)
	promote func(context.Context) error
}

// releaseFigures is what a release cost its controller and what the pods went through.
type releaseFigures struct {
	name   string
	took   time.Duration // start → the controller says done and only the new pods run
	cpu    time.Duration // the controller's CPU time over the release and settle
	own    RequestCounts // its writes, Events left out
	events float64
	// peakRSS is the controller's VmHWM, reset at the start; rssFile its file-backed RSS at the
	// end (the binary's pages read in).
	peakRSS, rssFile int64
	minAvailable     int // fewest Ready pods not terminating
	maxLive          int // most pods not yet gone, terminating ones included
}

// measureRelease runs a release and measures it from the write that starts it until the
// controller says done and the namespace runs only the new pods, all Ready, plus settle.
func (e *env) measureRelease(b *testing.B, run releaseRun) releaseFigures {
	b.Helper()
	cw := e.watchCapacity(b, run.ns, run.image)
	defer cw.close()
	w := e.openWindow(b)
	if err := resetPeakRSS(run.pid); err != nil {
		b.Fatal(err)
	}
	cpu0, err := agentproc.ProcCPUTime(run.pid)
	if err != nil {
		b.Fatal(err)
	}
	logf("bench: %s: start (%d pods)", run.name, replicas)
	ctx := context.Background()
	start := time.Now()
	if err := run.start(ctx); err != nil {
		b.Fatal(err)
	}
	if run.promote != nil {
		poll(b, run.name+": paused", 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
			ok, err := run.paused(ctx)
			return ok, "not paused yet", err
		})
		if err := run.promote(ctx); err != nil {
			b.Fatal(err)
		}
	}
	poll(b, run.name+": done", 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		ok, state, err := run.done(ctx)
		settled, pods := cw.settled()
		return ok && settled, state + "; " + pods, err
	})
	f := releaseFigures{name: run.name, took: time.Since(start)}
	time.Sleep(settle)
	cpu1, err := agentproc.ProcCPUTime(run.pid)
	if err != nil {
		b.Fatal(err)
	}
	f.cpu = cpu1 - cpu0
	mine := e.closeWindow(b, w).audit.ByClient(run.client)
	f.own = mine.Filter(func(k RequestKey) bool { return !IsEvent(k) })
	f.events = mine.Filter(IsEvent).Total()
	if f.peakRSS, err = agentproc.ProcStatus(run.pid, "VmHWM"); err != nil {
		b.Fatal(err)
	}
	if f.rssFile, err = agentproc.ProcStatus(run.pid, "RssFile"); err != nil {
		b.Fatal(err)
	}
	f.minAvailable, f.maxLive = cw.figures()
	fmt.Printf("\n--- %s: %d pods\n", run.name, replicas)
	say("release time %s; fewest available %d, most live %d; %s CPU %s; peak RSS %s (file-backed at the end %s)",
		Secs(f.took), f.minAvailable, f.maxLive, run.client, Secs(f.cpu), MiB(f.peakRSS), MiB(f.rssFile))
	say("own writes without Events: %.0f: %s; Events: %.0f", f.own.Total(), f.own.Format(0), f.events)
	return f
}

// compareReleases prints the agent/Argo ratios of one run: against the comparable set-up and,
// when given, against Argo's defaults.
func compareReleases(agent, argo, argoDefault releaseFigures) {
	ratio := func(what string, a, b float64, target float64) {
		ok := a <= target*b
		t := ""
		if target > 0 {
			t = fmt.Sprintf("≤ %.1f", target)
		}
		compare(what, agent.name, argo.name, a, b, t, &ok)
	}
	ratio("controller CPU seconds per release", agent.cpu.Seconds(), argo.cpu.Seconds(), 1.0)
	ratio("own writes per release (no Events)", agent.own.Total(), argo.own.Total(), 1.0)
	ratio("peak RSS MiB", float64(agent.peakRSS)/(1<<20), float64(argo.peakRSS)/(1<<20), 0.5)
	ratio("release time s", agent.took.Seconds(), argo.took.Seconds(), 0)
	ratio("fewest available pods", float64(agent.minAvailable), float64(argo.minAvailable), 0)
	ratio("most live pods", float64(agent.maxLive), float64(argo.maxLive), 0)
	if argoDefault.name != "" {
		compare("own writes per release (no Events), against Argo's defaults", agent.name, argoDefault.name,
			agent.own.Total(), argoDefault.own.Total(), "", nil)
		compare("controller CPU seconds, against Argo's defaults", agent.name, argoDefault.name,
			agent.cpu.Seconds(), argoDefault.cpu.Seconds(), "", nil)
	}
}

// capacityWatch follows every pod of a namespace: how many are live (not yet gone, terminating
// included) and how many available (Ready, not terminating), whatever controller owns them.
type capacityWatch struct {
	image string
	stop  chan struct{}

	mu                  sync.Mutex
	live, avail, newest map[types.UID]bool // newest: available on the released image
	minAvail, maxLive   int
	started             bool
}

func (e *env) watchCapacity(b *testing.B, ns, image string) *capacityWatch {
	b.Helper()
	w := &capacityWatch{image: image, stop: make(chan struct{}),
		live: map[types.UID]bool{}, avail: map[types.UID]bool{}, newest: map[types.UID]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(ns),
		informers.WithTransform(stripManagedFields))
	inf := f.Core().V1().Pods().Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj, false) },
		UpdateFunc: func(_, obj any) { w.observe(obj, false) },
		DeleteFunc: func(obj any) { w.observe(obj, true) },
	})
	if err != nil {
		b.Fatal(err)
	}
	f.Start(w.stop)
	// The handler's own sync: every pod of the first list delivered to it, not only stored.
	cache.WaitForCacheSync(w.stop, reg.HasSynced)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.minAvail, w.maxLive, w.started = len(w.avail), len(w.live), true
	return w
}

func (w *capacityWatch) observe(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	live := !deleted && podRunsOn(p)
	avail := !deleted && podLive(p) && podReady(p)
	set := func(m map[types.UID]bool, v bool) {
		if v {
			m[p.UID] = true
		} else {
			delete(m, p.UID)
		}
	}
	set(w.live, live)
	set(w.avail, avail)
	set(w.newest, avail && runsImage(p, w.image))
	if w.started { // the figures count from the synced list, not while it is read
		w.maxLive = max(w.maxLive, len(w.live))
		w.minAvail = min(w.minAvail, len(w.avail))
	}
}

// settled reports whether only the released pods run, all available.
func (w *capacityWatch) settled() (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.live) == replicas && len(w.newest) == replicas,
		fmt.Sprintf("%d live pods, %d available, %d available on the new image", len(w.live), len(w.avail), len(w.newest))
}

func (w *capacityWatch) figures() (minAvailable, maxLive int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.minAvail, w.maxLive
}

func (w *capacityWatch) close() { close(w.stop) }
