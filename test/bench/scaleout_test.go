package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// pairRounds is the number of Deployment/TApp pairs of BenchmarkScaleOutPair (BENCH_ROUNDS).
var pairRounds = envInt("BENCH_ROUNDS", 3)

// pairRound is one round of BenchmarkScaleOutPair: a Deployment and a gateless TApp scaled out
// back to back, in the order given.
type pairRound struct {
	n                int
	deploymentFirst  bool
	deployment, tapp *result
	loadD, loadT     string // load average when each phase started
}

func (r pairRound) ratio() float64 { return r.tapp.ready.Seconds() / r.deployment.ready.Seconds() }

// BenchmarkScaleOutPair (issue 15): the scale-out time of a TApp without the in-place readiness
// gate against a Deployment's, both from 0 to BENCH_REPLICAS Ready pods, with the machine in the
// same state for both: one agent (all controllers, as deployed) runs throughout, so that its CPU
// and its pod watch weigh on the API server, the scheduler and kwok in the Deployment's phases
// too, and the two scale-outs alternate over BENCH_ROUNDS rounds (Deployment first in odd rounds,
// TApp first in even ones), each in a fresh namespace deleted (every pod gone) before the next
// phase starts. Both run the same pod template, cpu request included, and their controllers have
// the same client QPS and burst. Reported per round and overall: TApp/Deployment time to every
// pod Ready; issue 15's figure is the median of the per-round ratios (target ≤ 1.0), the ratio
// of the sums is printed beside it. Each phase's timeline, from the audit log, tells where the
// time went: the controller's last pod create, the scheduler's last binding and kwok's last
// status write, as answered by the API server.
func BenchmarkScaleOutPair(b *testing.B) {
	e := getEnv(b)
	a := e.startAgent(b, "pair")
	var rounds []pairRound
	defer func() {
		stopAgent(b, a, "pair")
		comparePairs(rounds)
	}()
	for n := 1; n <= pairRounds; n++ {
		r := pairRound{n: n, deploymentFirst: n%2 == 1}
		order := []string{"Deployment", "TApp"}
		if !r.deploymentFirst {
			order = []string{"TApp", "Deployment"}
		}
		for _, kind := range order {
			ns := fmt.Sprintf("bench-pair-%d-%s", n, strings.ToLower(kind))
			e.deleteNamespace(b, ns) // left by an interrupted run
			e.ensureNamespace(b, ns)
			load := loadAverage()
			var res *result
			ok := b.Run(fmt.Sprintf("Round%d/%s", n, kind), func(b *testing.B) {
				res = e.measure(b, e.pairPhase(kind, ns, n, a))
			})
			e.deleteNamespace(b, ns)
			if !ok || res == nil {
				return
			}
			if kind == "Deployment" {
				r.deployment, r.loadD = res, load
			} else {
				r.tapp, r.loadT = res, load
			}
		}
		rounds = append(rounds, r)
		fmt.Printf("\n--- ScaleOutPair round %d (%s first): TApp (no gate) %s / Deployment %s = %.2f\n",
			n, map[bool]string{true: "Deployment", false: "TApp"}[r.deploymentFirst], Secs(r.tapp.ready), Secs(r.deployment.ready), r.ratio())
	}
}

// pairPhase is one scale-out of BenchmarkScaleOutPair: the Deployment (kube-controller-manager)
// or the TApp without the gate (the agent), on the same template: BenchmarkTAppInPlace's
// gateless scale-out, and a Deployment with the same cpu request.
func (e *env) pairPhase(kind, ns string, round int, a *agentproc.Agent) phase {
	name := fmt.Sprintf("ScaleOutPair/Round%d/%s", round, kind)
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuV1)}
	if kind == "Deployment" {
		return phase{
			name: name, ns: ns, selector: "app=" + appName, pods: replicas, isDone: readyOn(imageV1),
			action: func(ctx context.Context) error {
				d := newDeployment(appName, replicas, imageV1)
				d.Spec.Template.Spec.Containers[0].Resources.Requests = cpu
				_, err := e.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
				return err
			},
			complete: e.deploymentComplete(ns, appName, replicas), controller: "kube-controller-manager", ideal: 1,
		}
	}
	return phase{
		name: name, ns: ns, selector: appsv1alpha1.LabelTAppName + "=" + appName, pods: replicas, isDone: readyOn(imageV1),
		action: func(ctx context.Context) error {
			t := newTApp(appName, replicas, imageV1)
			t.Spec.Template.Spec.Containers[0].Resources.Requests = cpu
			t.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("25%"))
			t.Spec.UpdateStrategy.InPlaceUpdate.ReadinessGate = ptr.To(false)
			_, err := e.apps.AppsV1alpha1().TApps(ns).Create(ctx, t, metav1.CreateOptions{})
			return err
		},
		complete: e.tappComplete(ns, appName, replicas), controller: "workload-agent", agent: a, ideal: 1,
	}
}

// timeline is where a scale-out's time went, from the audit log, relative to the phase's start:
// when the API server answered the controller's last pod create, the scheduler's last binding and
// kwok's last pod status write, and the server-side latency of those writes.
type timeline struct {
	lastCreate, lastBinding, lastStatus          time.Duration
	createLatency, bindingLatency, statusLatency Durations
	budget                                       float64 // share of the controller's client limiter used until every pod was Ready
}

func (r *result) timeline() timeline {
	a := r.writes.audit
	ctrl := func(k AuditKey) bool { return strings.HasPrefix(k.Client, r.controller) }
	create := func(k AuditKey) bool {
		return ctrl(k) && IsPod(k.RequestKey) && k.Verb == "POST" && k.Subresource == ""
	}
	binding := func(k AuditKey) bool {
		return k.Client == "kube-scheduler" && IsPod(k.RequestKey) && k.Subresource == "binding"
	}
	status := func(k AuditKey) bool { return k.Client == "kwok" && IsPod(k.RequestKey) && k.Subresource == "status" }
	since := func(t time.Time) time.Duration {
		if t.IsZero() {
			return 0
		}
		return t.Sub(r.startedAt)
	}
	n := 0
	for k, v := range a.Writes {
		if ctrl(k) {
			n += v
		}
	}
	return timeline{
		lastCreate: since(a.LastAnswered(create)), lastBinding: since(a.LastAnswered(binding)), lastStatus: since(a.LastAnswered(status)),
		createLatency: a.Latencies(create), bindingLatency: a.Latencies(binding), statusLatency: a.Latencies(status),
		budget: float64(n) / (float64(clientBurst) + float64(clientQPS)*r.ready.Seconds()),
	}
}

// comparePairs prints BenchmarkScaleOutPair's rounds, their timelines and the overall ratios.
func comparePairs(rounds []pairRound) {
	if len(rounds) == 0 {
		return
	}
	fmt.Printf("\n--- Scale-out to %d Ready pods, TApp without the gate / Deployment: %d alternated rounds, the agent running throughout, client QPS/burst %d/%d\n",
		replicas, len(rounds), clientQPS, clientBurst)
	say("timeline from the audit log, from the phase's start (t = 0, the workload's create): controller's last pod create answered; kube-scheduler's last binding; kwok's last pod status write; API server latency p50/p90 of each; controller's client budget used")
	var ratios []float64
	var sumD, sumT time.Duration
	for _, r := range rounds {
		for _, side := range []struct {
			kind, load string
			res        *result
		}{{"Deployment", r.loadD, r.deployment}, {"TApp", r.loadT, r.tapp}} {
			tl := side.res.timeline()
			say("round %d %-10s (load %s): Ready %s; last create %s (p50/p90 %s/%s), last binding %s (%s/%s), last status %s (%s/%s); budget %.0f%%",
				r.n, side.kind, side.load, Secs(side.res.ready),
				Secs(tl.lastCreate), Millis(tl.createLatency.Median()), Millis(tl.createLatency.Percentile(90)),
				Secs(tl.lastBinding), Millis(tl.bindingLatency.Median()), Millis(tl.bindingLatency.Percentile(90)),
				Secs(tl.lastStatus), Millis(tl.statusLatency.Median()), Millis(tl.statusLatency.Percentile(90)),
				100*tl.budget)
		}
		say("round %d (%s first): ratio %.2f", r.n, map[bool]string{true: "Deployment", false: "TApp"}[r.deploymentFirst], r.ratio())
		ratios = append(ratios, r.ratio())
		sumD += r.deployment.ready
		sumT += r.tapp.ready
	}
	median := medianOf(ratios)
	meets := median <= 1
	compare(fmt.Sprintf("scale-out time to every pod Ready, TApp without the gate/Deployment, median of %d alternated rounds' ratios, agent running throughout (issue 15's figure)", len(rounds)),
		"median ratio", "1", median, 1, "<= 1", &meets)
	compare(fmt.Sprintf("scale-out time to every pod Ready, TApp without the gate/Deployment, sums of %d alternated rounds", len(rounds)),
		"TApp (no gate)", "Deployment", sumT.Seconds(), sumD.Seconds(), "", nil)
}

// medianOf is the middle value, or the mean of the two middle ones; 0 when empty.
func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	switch n := len(s); {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}
