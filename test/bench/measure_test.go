package bench

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// Targets of issue 4, reported against, never asserted.
const (
	targetWritesPerPod = 1.1
	targetPeakRSS      = 100 << 20
)

// settle is how long a window stays open after the workload reports completion, so that the
// writes that trail it (a last status update, Events) are counted.
const settle = 3 * time.Second

// phase is one measured operation on a workload: from the write that starts it until every
// pod is done and the workload's status says so.
type phase struct {
	name     string // e.g. "TApp/ScaleOut"
	ns       string
	selector string // the workload's pods
	pods     int
	isDone   func(*corev1.Pod) bool // a pod in its final state (Ready, on the new template)
	action   func(context.Context) error
	complete func(context.Context) (bool, string, error)
	// controller is the client the workload's controller writes with, as ClientName returns it
	// (a prefix: "kube-controller-manager" covers all its controllers).
	controller string
	agent      *agentproc.Agent // its peak RSS is reported; nil for kube-controller-manager
	// ideal is the fewest controller pod writes per pod the operation needs: 1 for a create or
	// an in-place update, 2 for a re-creation (delete, create). The target is 1.1 × ideal.
	ideal float64
	// peakTarget is the target of the agent's peak RSS; 0: targetPeakRSS.
	peakTarget int64
}

// window is a span of API writes: apiserver_request_total and audit log deltas.
type window struct {
	metrics     RequestCounts
	auditOffset int64
}

// writes are the API writes of a window.
type writes struct {
	all   RequestCounts // apiserver_request_total deltas, write verbs only
	audit AuditCounts   // the same writes, by client
}

func (e *env) openWindow(b *testing.B) window {
	b.Helper()
	text, err := e.cluster.APIServerMetrics(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	m, err := ParseRequestCounts(text)
	if err != nil {
		b.Fatal(err)
	}
	off, err := AuditOffset(e.auditPath)
	if err != nil {
		b.Fatal(err)
	}
	return window{metrics: m, auditOffset: off}
}

func (e *env) closeWindow(b *testing.B, w window) writes {
	b.Helper()
	text, err := e.cluster.APIServerMetrics(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	m, err := ParseRequestCounts(text)
	if err != nil {
		b.Fatal(err)
	}
	a, _, err := ReadAudit(e.auditPath, w.auditOffset)
	if err != nil {
		b.Fatal(err)
	}
	return writes{all: m.Sub(w.metrics).Writes(), audit: a}
}

// result is what a phase measured.
type result struct {
	name string
	pods int
	// startedAt is when the action that starts the phase was sent (the audit timeline's origin).
	startedAt time.Time
	// ready: every pod done; complete: the workload's status says so too.
	first, half, ready, complete time.Duration
	writes                       writes
	controller                   string
	ideal                        float64
	peakRSS                      int64 // 0 without an agent
	// agentCPU is the agent's CPU time (user and system) from the phase's start to its end plus
	// settle; rssAnon and rssFile its resident memory at that end, anonymous and file-backed.
	agentCPU         time.Duration
	rssAnon, rssFile int64
	peakTarget       int64
}

// meetsWrites reports whether the controller's pod writes per pod are within 1.1 × ideal.
func (r *result) meetsWrites() bool {
	return r.perPod(r.controllerPodWrites().Total()) <= targetWritesPerPod*r.ideal
}

func (r *result) podWrites() RequestCounts { return r.writes.all.Filter(IsPod) }

// controllerPodWrites are the pod writes (any subresource) of the workload's controller.
func (r *result) controllerPodWrites() RequestCounts {
	out := RequestCounts{}
	for _, c := range r.writes.audit.Clients() {
		if strings.HasPrefix(c, r.controller) {
			for k, v := range r.writes.audit.ByClient(c).Filter(IsPod) {
				out[k] += v
			}
		}
	}
	return out
}

func (r *result) perPod(v float64) float64 { return v / float64(r.pods) }

// results keeps every phase of the run by name, for comparisons and the summary.
var (
	results     = map[string]*result{}
	resultOrder []string
)

func keep(r *result) {
	if _, ok := results[r.name]; !ok {
		resultOrder = append(resultOrder, r.name)
	}
	results[r.name] = r
}

// measure runs a phase and prints and keeps its figures.
func (e *env) measure(b *testing.B, ph phase) *result {
	b.Helper()
	if b.N != 1 {
		logf("bench: %s is measured once; b.N=%d is ignored (run with -benchtime=1x)", ph.name, b.N)
	}
	tr := e.trackPods(b, ph.ns, ph.selector, ph.pods, ph.isDone)
	w := e.openWindow(b)
	var cpuAtStart time.Duration
	if ph.agent != nil {
		if err := resetPeakRSS(ph.agent.Pid()); err != nil {
			b.Fatalf("resetting the agent's peak RSS: %v", err)
		}
		var err error
		if cpuAtStart, err = ph.agent.CPUTime(); err != nil {
			b.Fatal(err)
		}
	}
	logf("bench: %s: start (%d pods)", ph.name, ph.pods)
	ctx := context.Background()
	b.ResetTimer()
	tr.begin()
	start := time.Now()
	if err := ph.action(ctx); err != nil {
		b.Fatal(err)
	}
	tr.wait(b, ph.name)
	b.StopTimer()
	poll(b, ph.name+": workload status complete", 100*time.Millisecond, ph.complete)
	completeAt := time.Since(start)
	time.Sleep(settle)
	r := &result{
		name: ph.name, pods: ph.pods, startedAt: start, controller: ph.controller, ideal: max(ph.ideal, 1),
		first: tr.firstGood, half: tr.halfGood, ready: tr.allGood, complete: max(completeAt, tr.allGood),
		writes: e.closeWindow(b, w), peakTarget: cmp.Or(ph.peakTarget, targetPeakRSS),
	}
	if ph.agent != nil {
		peak, err := ph.agent.PeakRSS()
		if err != nil {
			b.Fatal(err)
		}
		r.peakRSS = peak
		cpu, err := ph.agent.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		r.agentCPU = cpu - cpuAtStart
		if r.rssAnon, r.rssFile, err = ph.agent.RSSParts(); err != nil {
			b.Fatal(err)
		}
	}
	keep(r)
	r.print()
	b.ReportMetric(r.ready.Seconds(), "s-ready")
	b.ReportMetric(r.complete.Seconds(), "s-status")
	b.ReportMetric(r.perPod(r.podWrites().Total()), "pod-writes/pod")
	b.ReportMetric(r.perPod(r.controllerPodWrites().Total()), "ctrl-pod-writes/pod")
	if r.peakRSS > 0 {
		b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-RSS-MiB")
	}
	return r
}

func (r *result) print() {
	fmt.Printf("\n--- %s: %d pods\n", r.name, r.pods)
	say("wall time: every pod done (Ready on the new template) after %s (%.1f pods/s); first %s, half %s; workload status complete after %s",
		Secs(r.ready), float64(r.pods)/r.ready.Seconds(), Secs(r.first), Secs(r.half), Secs(r.complete))
	pods := r.podWrites()
	say("pod writes, apiserver_request_total deltas (every client): %.0f = %.2f per pod: %s",
		pods.Total(), r.perPod(pods.Total()), pods.Format(0))
	ctrl := r.controllerPodWrites()
	say("pod writes of the controller (%s, from the audit log): %.0f = %.2f per pod (ideal %.0f, target <= %.1f: %s): %s",
		r.controller, ctrl.Total(), r.perPod(ctrl.Total()), r.ideal, targetWritesPerPod*r.ideal,
		Verdict(r.meetsWrites()), ctrl.Format(0))
	// Every write of a controller's client passes its rate limiter (QPS, burst): at most
	// burst + QPS·T requests in T seconds. Near 100% the phase is bound by the client budget.
	for _, c := range r.writes.audit.Clients() {
		if !strings.HasPrefix(c, r.controller) {
			continue
		}
		n := r.writes.audit.ByClient(c).Total()
		limit := float64(clientBurst) + float64(clientQPS)*r.ready.Seconds()
		say("client budget of %s: %.0f writes (all resources) while the pods got ready in %s = %.0f/s; its limiter allows %.0f (burst %d + %d QPS × %s): %.0f%% used",
			c, n, Secs(r.ready), n/r.ready.Seconds(), limit, clientBurst, clientQPS, Secs(r.ready), 100*n/limit)
	}
	say("writes by client (audit log):")
	a := r.writes.audit
	for _, c := range a.Clients() {
		mine := a.ByClient(c)
		line := fmt.Sprintf("  %-48s pods: %s", c, mine.Filter(IsPod).Format(0))
		if obj := mine.Filter(IsControllerObject); len(obj) > 0 {
			line += "; controller objects: " + obj.Format(0)
		}
		if ev := mine.Filter(IsEvent).Total(); ev > 0 {
			line += fmt.Sprintf("; events: %.0f", ev)
		}
		if other := mine.Filter(func(k RequestKey) bool { return !IsPod(k) && !IsControllerObject(k) && !IsEvent(k) }); len(other) > 0 {
			line += "; other: " + other.Format(0)
		}
		if failed := a.FailedByClient(c); len(failed) > 0 {
			line += "; of which failed (4xx/5xx): " + failed.Format(0)
		}
		say("%s", line)
	}
	say("controller-object writes (apiserver_request_total): %s", r.writes.all.Filter(IsControllerObject).Format(0))
	say("event writes: %.0f", r.writes.all.Filter(IsEvent).Total())
	if r.peakRSS > 0 {
		say("agent peak RSS during the phase: %s (target <= %s: %s)", MiB(r.peakRSS), MiB(r.peakTarget), Verdict(r.peakRSS <= r.peakTarget))
		say("agent RSS at the end: %s anonymous (Go heap, stacks), %s file-backed (the binary's pages); agent CPU during the phase: %s",
			MiB(r.rssAnon), MiB(r.rssFile), Secs(r.agentCPU))
	}
}

// compare prints "a/b" for the named results' figure and keeps it for the summary.
type comparison struct {
	what, a, b  string
	va, vb      float64
	target      string
	meetsTarget *bool
}

var comparisons []comparison

func compare(what, a, b string, va, vb float64, target string, meets *bool) {
	c := comparison{what: what, a: a, b: b, va: va, vb: vb, target: target, meetsTarget: meets}
	comparisons = append(comparisons, c)
	line := fmt.Sprintf("ratio %s: %s %.2f / %s %.2f = %s", what, a, va, b, vb, Ratio(va, vb))
	if target != "" {
		line += fmt.Sprintf(" (target %s: %s)", target, Verdict(meets != nil && *meets))
	}
	say("%s", line)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
