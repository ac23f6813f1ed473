package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// Reaction and status lag (issue 30): how long the agent takes to answer a change, at idle, while
// BENCH_SMALL_WORKLOADS TApps and BENCH_LOAD_CANARIES Canaries are being created and scale out
// ("busy"), and once they are settled ("loaded"); and, over that scale-out, how long each TApp's
// status lags its last pod turning Ready. Every time is the arrival of a watch event in this
// process, so that both ends of an interval went through the same API server watch.
var (
	loadCanaries   = envInt("BENCH_LOAD_CANARIES", 500)  // Canaries holding the first load TApps
	reactionRounds = envInt("BENCH_REACTION_ROUNDS", 20) // probe rounds at idle and loaded
)

const (
	reactionNS     = "bench-reaction"
	reactionLoadNS = "bench-reaction-load"
	probeName      = "probe"
	promoName      = "promo"
	// Targets of issue 30, reported against, never asserted.
	targetReactionIdle   = 50 * time.Millisecond
	targetReactionLoaded = 250 * time.Millisecond
	targetStatusLagP99   = 2 * time.Second
)

// The three reactions a probe round measures.
const (
	reactSpec    = "spec change → first agent write"
	reactStatus  = "pod Ready → status written"
	reactPromote = "promote → first new pod"
)

var reactionKinds = []string{reactSpec, reactStatus, reactPromote}

// reactionSamples are the durations of each reaction under one condition.
type reactionSamples map[string]Durations

// BenchmarkReaction: the agent's reaction times at idle, busy and loaded, the status lag of a
// 2000-TApp scale-out, and the agent's CPU per 1000 pod events in it.
func BenchmarkReaction(b *testing.B) {
	e := getEnv(b)
	e.clearEarlierWorkloads(b)
	for _, ns := range []string{reactionNS, reactionLoadNS} {
		e.deleteNamespace(b, ns)
		e.ensureNamespace(b, ns)
	}
	a := e.startAgent(b, "reaction")
	defer stopAgent(b, a, "reaction")
	p := e.newProbes(b)
	defer p.stop()

	idle := reactionSamples{}
	for range reactionRounds {
		p.round(b, idle)
	}

	lag := e.watchLoad(b)
	defer lag.stop()
	busy := reactionSamples{}
	load := e.startLoad(b, a, lag)
	lastLog := time.Now()
	for first := true; first || !load.done(b); first = false {
		p.round(b, busy)
		if time.Since(lastLog) > 15*time.Second {
			_, complete := lag.lags()
			logf("bench: Reaction: %d of %d load TApps complete; %d busy rounds", complete, smallWorkloads, len(busy[reactSpec])/2)
			lastLog = time.Now()
		}
	}
	load.report(b)

	loaded := reactionSamples{}
	for range reactionRounds {
		p.round(b, loaded)
	}
	reportReactions(b, idle, busy, loaded)
	e.deleteNamespace(b, reactionLoadNS)
	e.deleteNamespace(b, reactionNS)
}

// reportReactions prints p50, p99 and the extremes of every reaction under every condition.
func reportReactions(b *testing.B, idle, busy, loaded reactionSamples) {
	fmt.Printf("\n--- Reaction: the agent's reaction times, from this process's watches (idle; busy: while %d TApps and %d Canaries are created and scale out; loaded: once they are settled)\n",
		smallWorkloads, min(loadCanaries, smallWorkloads))
	say("| reaction | condition | samples | p50 | p99 | min | max | p50 target |")
	say("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, kind := range reactionKinds {
		for _, c := range []struct {
			name    string
			samples reactionSamples
			target  time.Duration
		}{{"idle", idle, targetReactionIdle}, {"busy", busy, targetReactionLoaded}, {"loaded", loaded, targetReactionLoaded}} {
			d := c.samples[kind]
			p50 := d.Percentile(50)
			say("| %s | %s | %d | %s | %s | %s | %s | %s (%s) |", kind, c.name, len(d), Millis(p50), Millis(d.Percentile(99)),
				Millis(d.Min()), Millis(d.Max()), Millis(c.target), Verdict(len(d) > 0 && p50 <= c.target))
			b.ReportMetric(float64(p50.Microseconds())/1000, fmt.Sprintf("ms-p50-%s-%s", c.name, metricName(kind)))
		}
	}
}

// metricName is a reaction's short name for b.ReportMetric.
func metricName(kind string) string {
	switch kind {
	case reactSpec:
		return "spec"
	case reactStatus:
		return "status"
	default:
		return "promote"
	}
}

// eventWatch follows pods, TApps and Canaries of one namespace and hands the arrival time of the
// first event matching an expectation registered before the change that causes it.
type eventWatch struct {
	stopCh chan struct{}

	mu      sync.Mutex
	waiters []*waiter
}

type waiter struct {
	match func(obj any) bool
	at    chan time.Time
}

func (e *env) newEventWatch(b *testing.B, ns string) *eventWatch {
	b.Helper()
	w := &eventWatch{stopCh: make(chan struct{})}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			w.observe(deleted{obj})
		},
	}
	e.watchNamespace(b, ns, w.stopCh, handler, handler, handler)
	return w
}

// watchNamespace runs informers of the pods, TApps and Canaries of ns with these handlers (nil:
// not watched) until stop, and waits for their caches.
func (e *env) watchNamespace(b *testing.B, ns string, stop chan struct{}, pods, tapps, canaries cache.ResourceEventHandler) {
	b.Helper()
	kf := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(ns), informers.WithTransform(stripManagedFields))
	af := externalversions.NewSharedInformerFactoryWithOptions(e.apps, 0, externalversions.WithNamespace(ns), externalversions.WithTransform(stripManagedFields))
	for _, h := range []struct {
		inf     cache.SharedIndexInformer
		handler cache.ResourceEventHandler
	}{{kf.Core().V1().Pods().Informer(), pods}, {af.Apps().V1alpha1().TApps().Informer(), tapps}, {af.Apps().V1alpha1().Canaries().Informer(), canaries}} {
		if h.handler == nil {
			continue
		}
		if _, err := h.inf.AddEventHandler(h.handler); err != nil {
			b.Fatal(err)
		}
	}
	kf.Start(stop)
	af.Start(stop)
	kf.WaitForCacheSync(stop)
	af.WaitForCacheSync(stop)
}

// deleted wraps the last state of a deleted object.
type deleted struct{ obj any }

func (w *eventWatch) stop() { close(w.stopCh) }

func (w *eventWatch) observe(obj any) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.waiters[:0]
	for _, wt := range w.waiters {
		if wt.match(obj) {
			wt.at <- now
			continue
		}
		kept = append(kept, wt)
	}
	w.waiters = kept
}

// expect registers match; its waiter gets the arrival time of the first event it matches.
func (w *eventWatch) expect(match func(obj any) bool) *waiter {
	wt := &waiter{match: match, at: make(chan time.Time, 1)}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiters = append(w.waiters, wt)
	return wt
}

func (wt *waiter) wait(b *testing.B, what string) time.Time {
	b.Helper()
	select {
	case t := <-wt.at:
		return t
	case <-time.After(phaseTimeout):
		b.Fatalf("reaction probe: no event %s after %v (a safety bound, not a target)", what, phaseTimeout)
		return time.Time{}
	}
}

func tappEvent(name string, match func(*appsv1alpha1.TApp) bool) func(any) bool {
	return func(obj any) bool {
		t, ok := obj.(*appsv1alpha1.TApp)
		return ok && t.Name == name && match(t)
	}
}

func canaryEvent(name string, match func(*appsv1alpha1.Canary) bool) func(any) bool {
	return func(obj any) bool {
		c, ok := obj.(*appsv1alpha1.Canary)
		return ok && c.Name == name && match(c)
	}
}

// podEvent matches events of the pod of instance id of TApp tapp (deleted: its deletion).
func podEvent(tapp string, id int, match func(p *corev1.Pod, deleted bool) bool) func(any) bool {
	return func(obj any) bool {
		gone := false
		if d, ok := obj.(deleted); ok {
			obj, gone = d.obj, true
		}
		p, ok := obj.(*corev1.Pod)
		return ok && p.Labels[appsv1alpha1.LabelTAppName] == tapp && p.Labels[appsv1alpha1.LabelInstanceID] == fmt.Sprint(id) && match(p, gone)
	}
}

// probes are the workloads whose changes are timed: a TApp scaled between 1 and 2 instances,
// and a TApp of 2 instances released in place by a Canary that waits for a promote after its
// first step.
type probes struct {
	e     *env
	watch *eventWatch
	image int // the promo TApp's current image number
}

func (e *env) newProbes(b *testing.B) *probes {
	b.Helper()
	ctx := context.Background()
	p := &probes{e: e, watch: e.newEventWatch(b, reactionNS), image: 1}
	tapps := e.apps.AppsV1alpha1().TApps(reactionNS)
	if _, err := tapps.Create(ctx, newTApp(probeName, 1, imageV1), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	promo := newTApp(promoName, 2, probeImage(1))
	promo.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	if _, err := tapps.Create(ctx, promo, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	c := &appsv1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: promoName}}
	c.Spec.Replicas = 2
	c.Spec.TargetRef = &appsv1alpha1.CanaryTargetRef{Kind: "TApp", Name: promoName}
	c.Spec.Steps = []appsv1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1), Pause: &appsv1alpha1.CanaryPause{}}}
	if _, err := e.apps.AppsV1alpha1().Canaries(reactionNS).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	poll(b, "the probe TApps complete", 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		ok1, s1, err := e.tappComplete(reactionNS, probeName, 1)(ctx)
		if err != nil || !ok1 {
			return false, s1, err
		}
		return e.tappComplete(reactionNS, promoName, 2)(ctx)
	})
	poll(b, "the probe Canary holding", 200*time.Millisecond, p.canaryCompleted)
	return p
}

func (p *probes) stop() { p.watch.stop() }

func probeImage(n int) string { return fmt.Sprintf("registry.invalid/probe:v%d", n) }

func (p *probes) canaryCompleted(ctx context.Context) (bool, string, error) {
	c, err := p.e.apps.AppsV1alpha1().Canaries(reactionNS).Get(ctx, promoName, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	return c.Status.Phase == appsv1alpha1.CanaryCompleted && c.Status.ObservedGeneration == c.Generation,
		fmt.Sprintf("%s batch %d: %s", c.Status.Phase, c.Status.CurrentBatch, c.Status.Message), nil
}

// round times one scale-up (spec change → pod created; pod Ready → status), one scale-down
// (spec change → pod deleted) and one promote (→ the first pod on the new template).
func (p *probes) round(b *testing.B, into reactionSamples) {
	b.Helper()
	p.scale(b, into, 2)
	p.scale(b, into, 1)
	p.promote(b, into)
}

// scale sets the probe TApp's replicas to n (from the other of 1 and 2) and times the agent's
// answer.
func (p *probes) scale(b *testing.B, into reactionSamples, n int) {
	b.Helper()
	ctx := context.Background()
	tapps := p.e.apps.AppsV1alpha1().TApps(reactionNS)
	t, err := tapps.Get(ctx, probeName, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	gen := t.Generation
	specSeen := p.watch.expect(tappEvent(probeName, func(t *appsv1alpha1.TApp) bool { return t.Generation > gen }))
	var written, ready, status *waiter
	if n == 2 {
		written = p.watch.expect(podEvent(probeName, 1, func(_ *corev1.Pod, gone bool) bool { return !gone }))
		ready = p.watch.expect(podEvent(probeName, 1, func(p *corev1.Pod, gone bool) bool { return !gone && podReady(p) }))
	} else {
		written = p.watch.expect(podEvent(probeName, 1, func(p *corev1.Pod, gone bool) bool { return gone || p.DeletionTimestamp != nil }))
	}
	status = p.watch.expect(tappEvent(probeName, func(t *appsv1alpha1.TApp) bool {
		s := t.Status
		return s.ObservedGeneration > gen && s.ReadyReplicas == int32(n) && s.Replicas == int32(n)
	}))
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	if _, err := tapps.Patch(ctx, probeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	t0 := specSeen.wait(b, "of the probe's new generation")
	into[reactSpec] = append(into[reactSpec], written.wait(b, "of the probe's pod written").Sub(t0))
	if ready != nil {
		readyAt := ready.wait(b, "of the probe's new pod Ready")
		into[reactStatus] = append(into[reactStatus], status.wait(b, "of the probe's status").Sub(readyAt))
		return
	}
	status.wait(b, "of the probe's status")
}

// promote changes the promo TApp's image, waits until its Canary pauses after the first step,
// promotes it and times the first pod moved to the new template; then waits for completion.
func (p *probes) promote(b *testing.B, into reactionSamples) {
	b.Helper()
	ctx := context.Background()
	p.image++
	image := probeImage(p.image)
	paused := p.watch.expect(canaryEvent(promoName, func(c *appsv1alpha1.Canary) bool {
		return c.Status.Phase == appsv1alpha1.CanaryPaused && c.Status.CurrentBatch == 1 && c.Status.ObservedGeneration == c.Generation
	}))
	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":%q}]}}}}`, image)
	if _, err := p.e.apps.AppsV1alpha1().TApps(reactionNS).Patch(ctx, promoName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	paused.wait(b, "of the probe Canary paused at batch 1")
	c, err := p.e.apps.AppsV1alpha1().Canaries(reactionNS).Get(ctx, promoName, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	gen := c.Generation
	promoted := p.watch.expect(canaryEvent(promoName, func(c *appsv1alpha1.Canary) bool { return c.Generation > gen && c.Spec.ApprovedBatch >= 1 }))
	moved := p.watch.expect(podEvent(promoName, 0, func(p *corev1.Pod, gone bool) bool {
		return !gone && len(p.Spec.Containers) > 0 && p.Spec.Containers[0].Image == image
	}))
	if _, err := p.e.apps.AppsV1alpha1().Canaries(reactionNS).Patch(ctx, promoName, types.MergePatchType, []byte(`{"spec":{"approvedBatch":1}}`), metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	t0 := promoted.wait(b, "of the probe Canary promoted")
	into[reactPromote] = append(into[reactPromote], moved.wait(b, "of the promo pod on the new template").Sub(t0))
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout)
	defer cancel()
	for {
		if ok, _, _ := p.canaryCompleted(ctx); ok {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("reaction probe: the Canary did not complete in %v", phaseTimeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// loadWatch follows the load's pods and TApps: when each TApp's last pod turned Ready and when its
// status said complete, and how many pod events there were.
type loadWatch struct {
	stopCh    chan struct{}
	podEvents atomic.Int64

	mu         sync.Mutex
	readyPods  map[string]map[string]bool // TApp → Ready pods
	allReadyAt map[string]time.Time
	completeAt map[string]time.Time
	// What the status lacked in the last TApp event between its last pod Ready and its status
	// complete (statuslag_test.go), the generations seen, and the TApps whose generation changed
	// after their last pod turned Ready.
	lacking    map[string]string
	generation map[string]int64
	newGen     map[string]bool
}

func (e *env) watchLoad(b *testing.B) *loadWatch {
	b.Helper()
	w := &loadWatch{stopCh: make(chan struct{}), readyPods: map[string]map[string]bool{},
		allReadyAt: map[string]time.Time{}, completeAt: map[string]time.Time{},
		lacking: map[string]string{}, generation: map[string]int64{}, newGen: map[string]bool{}}
	e.watchNamespace(b, reactionLoadNS, w.stopCh, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.pod(obj) },
		UpdateFunc: func(_, obj any) { w.pod(obj) },
		DeleteFunc: func(any) { w.podEvents.Add(1) },
	}, cache.ResourceEventHandlerFuncs{
		AddFunc:    w.tapp,
		UpdateFunc: func(_, obj any) { w.tapp(obj) },
	}, nil)
	return w
}

func (w *loadWatch) stop() { close(w.stopCh) }

func (w *loadWatch) pod(obj any) {
	w.podEvents.Add(1)
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	name := p.Labels[appsv1alpha1.LabelTAppName]
	w.mu.Lock()
	defer w.mu.Unlock()
	ready := w.readyPods[name]
	if ready == nil {
		ready = map[string]bool{}
		w.readyPods[name] = ready
	}
	if podReady(p) && p.DeletionTimestamp == nil {
		ready[p.Name] = true
	} else {
		delete(ready, p.Name)
		delete(w.allReadyAt, name)
	}
	if _, seen := w.allReadyAt[name]; !seen && len(ready) == smallReplicas {
		w.allReadyAt[name] = now
	}
}

func (w *loadWatch) tapp(obj any) {
	t, ok := obj.(*appsv1alpha1.TApp)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noteLacking(t)
	s, n := t.Status, int32(smallReplicas)
	if s.ObservedGeneration != t.Generation || s.Replicas != n || s.UpdatedReplicas != n || s.ReadyReplicas != n || s.AvailableReplicas != n {
		return
	}
	if _, seen := w.completeAt[t.Name]; !seen {
		w.completeAt[t.Name] = now
	}
}

// lags are, per TApp complete, its status complete less its last pod Ready; and how many are
// complete.
func (w *loadWatch) lags() (Durations, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out Durations
	for name, done := range w.completeAt {
		if ready, ok := w.allReadyAt[name]; ok {
			out = append(out, done.Sub(ready))
		}
	}
	return out, len(w.completeAt)
}

// load is the busy condition: the load's TApps and Canaries being created and scaling out.
type load struct {
	e          *env
	agent      *agentproc.Agent
	watch      *loadWatch
	start      time.Time
	cpuAtStart time.Duration
	created    chan struct{}
	window     window // the API writes from the load's start
	finished   atomic.Bool
	readyAt    time.Duration
	err        error // of the creations, read once created is closed
}

// startLoad creates the load (from goroutines, with the scenery's client budget) and returns at
// once; done reports when every load TApp's status is complete.
func (e *env) startLoad(b *testing.B, a *agentproc.Agent, w *loadWatch) *load {
	b.Helper()
	client, err := versioned.NewForConfig(e.sceneryConfig())
	if err != nil {
		b.Fatal(err)
	}
	if err := resetPeakRSS(a.Pid()); err != nil {
		b.Fatal(err)
	}
	l := &load{e: e, agent: a, watch: w, created: make(chan struct{})}
	if l.cpuAtStart, err = a.CPUTime(); err != nil {
		b.Fatal(err)
	}
	l.window = e.openWindow(b)
	logf("bench: Reaction: creating %d TApps of %d pods and %d Canaries", smallWorkloads, smallReplicas, min(loadCanaries, smallWorkloads))
	l.start = time.Now()
	go func() {
		defer close(l.created)
		l.err = createEach(smallWorkloads, func(ctx context.Context, i int) error {
			if _, err := client.AppsV1alpha1().TApps(reactionLoadNS).Create(ctx, newTApp(smallName(i), smallReplicas, imageV1), metav1.CreateOptions{}); err != nil {
				return err
			}
			if i >= loadCanaries {
				return nil
			}
			c := &appsv1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: smallName(i)}}
			c.Spec.Replicas = int32(smallReplicas)
			c.Spec.TargetRef = &appsv1alpha1.CanaryTargetRef{Kind: "TApp", Name: smallName(i)}
			c.Spec.Steps = []appsv1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1)}}
			_, err := client.AppsV1alpha1().Canaries(reactionLoadNS).Create(ctx, c, metav1.CreateOptions{})
			return err
		})
	}()
	return l
}

// done reports whether the load is created and every TApp of it complete.
func (l *load) done(b *testing.B) bool {
	b.Helper()
	if l.finished.Load() {
		return true
	}
	select {
	case <-l.created:
		if l.err != nil {
			b.Fatalf("creating the load: %v", l.err)
		}
	default:
		return false
	}
	if _, complete := l.watch.lags(); complete < smallWorkloads {
		return false
	}
	l.readyAt = time.Since(l.start)
	l.finished.Store(true)
	return true
}

// report prints the status lag, the agent's CPU per 1000 pod events and peak RSS over the load's
// scale-out.
func (l *load) report(b *testing.B) {
	b.Helper()
	cpu, err := l.agent.CPUTime()
	if err != nil {
		b.Fatal(err)
	}
	cpu -= l.cpuAtStart
	peak, err := l.agent.PeakRSS()
	if err != nil {
		b.Fatal(err)
	}
	lags, complete := l.watch.lags()
	events := l.watch.podEvents.Load()
	writes := l.e.closeWindow(b, l.window).audit.ByClient("workload-agent")
	perK := cpu.Seconds() / (float64(events) / 1000)
	fmt.Printf("\n--- Reaction/Load: %d TApps of %d pods and %d Canaries, created at once, every status complete after %s (probe rounds ran beside it)\n",
		smallWorkloads, smallReplicas, min(loadCanaries, smallWorkloads), Secs(l.readyAt))
	p99 := lags.Percentile(99)
	say("status lag (a TApp's last pod Ready → its status complete), %d TApps: p50 %s, p99 %s, max %s (p99 target <= %s: %s)",
		len(lags), Millis(lags.Percentile(50)), Millis(p99), Millis(lags.Max()), Millis(targetStatusLagP99), Verdict(len(lags) == complete && p99 <= targetStatusLagP99))
	say("agent CPU: %.1f s for %d pod events = %.2f s per 1000 pod events; agent peak RSS %s", cpu.Seconds(), events, perK, MiB(peak))
	say("agent writes (audit log, probes included): %.0f: %s", writes.Total(), writes.Format(0))
	l.watch.reportTail()
	reportAgentQueues(b, l.agent)
	b.ReportMetric(float64(p99.Milliseconds()), "ms-status-lag-p99")
	b.ReportMetric(perK, "cpu-s/1000-pod-events")
}
