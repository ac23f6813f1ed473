package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
)

const canaryNS = "bench-canary"

// BenchmarkCanaryRelease: the agent releases a Canary of BENCH_REPLICAS pods in 4 steps (25%,
// 50%, 75%, then 100%) under the default maxSurge (25%), from a stable Deployment of as many
// pods. Watched from this process: the most pods the two Deployments ran at once (terminating
// ones included) against replicas + maxSurge, the fewest available against replicas, and when
// the Canary said Completed against when the last stable pod disappeared (Completed must come
// after: docs/canary.md, "Completed").
func BenchmarkCanaryRelease(b *testing.B) {
	e := getEnv(b)
	e.deleteNamespace(b, canaryNS)
	e.ensureNamespace(b, canaryNS)
	ctx := context.Background()
	if _, err := e.kube.AppsV1().Deployments(canaryNS).Create(ctx, newDeployment("stable", replicas, imageV1), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	poll(b, "the stable Deployment complete", time.Second, e.deploymentComplete(canaryNS, "stable", replicas))

	w := e.watchRelease(b)
	defer w.stop()
	a := e.startAgent(b, "canary", "--controllers=canary")
	defer func() { _ = a.Stop() }()
	// Deleted while the agent runs: it removes the Canary's finalizer (docs/canary.md), which
	// would otherwise hold the namespace Terminating for good.
	defer e.deleteNamespace(b, canaryNS)
	c := newCanaryRelease()
	surge, err := appsv1alpha1.CanaryMaxSurge(&c.Spec)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := e.apps.AppsV1alpha1().Canaries(canaryNS).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	poll(b, "the Canary Completed", time.Second, func(ctx context.Context) (bool, string, error) {
		done, state := w.completedState()
		return done, state, nil
	})
	peak, minAvailable, completed, stableGone := w.figures()
	limit := replicas + int(surge)
	peakOK, availOK, orderOK := peak <= limit, minAvailable >= replicas, !stableGone.IsZero() && !completed.Before(stableGone)
	say("Canary/Release: %d pods in 4 steps in %s; peak %d pods, fewest available %d", replicas, completed.Sub(start).Round(time.Millisecond), peak, minAvailable)
	compare("Canary peak pods / (replicas + maxSurge)", "peak", "limit", float64(peak), float64(limit), "≤ 1.0", &peakOK)
	compare("Canary min available / replicas", "available", "replicas", float64(minAvailable), float64(replicas), "≥ 1.0", &availOK)
	lag := completed.Sub(stableGone).Seconds()
	say("Canary Completed − last stable pod gone = %.3f s (target ≥ 0: %s)", lag, Verdict(orderOK))
	b.ReportMetric(float64(peak)/float64(limit), "peak/limit")
	b.ReportMetric(float64(minAvailable)/float64(replicas), "minavail/replicas")
	b.ReportMetric(lag, "completed-after-stable-gone-s")
}

// newCanaryRelease is the Canary "release" of the release benchmarks: BENCH_REPLICAS pods from
// the Deployment "stable" to "canary" on imageV2, in 4 steps (25%, 50%, 75%, then 100%).
func newCanaryRelease() *appsv1alpha1.Canary {
	c := &appsv1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "release"}}
	c.Spec.Replicas = int32(replicas)
	c.Spec.StableRef.Name = "stable"
	c.Spec.Canary.Name = "canary"
	c.Spec.Canary.Template = podTemplate("canary", imageV2)
	for _, p := range []string{"25%", "50%", "75%"} {
		c.Spec.Steps = append(c.Spec.Steps, appsv1alpha1.CanaryStep{Replicas: intstr.FromString(p)})
	}
	return c
}

// releaseWatch follows a release from this process: pods (every pod of the namespace belongs to
// one of the two Deployments), Deployments (available pods) and the Canary (its phase).
type releaseWatch struct {
	cancel context.CancelFunc

	mu                sync.Mutex
	pods              map[string]bool // live pods by name → whether it is a stable pod
	peak, minAvail    int
	available         map[string]int32
	stableGone        time.Time
	completed         time.Time
	phase, message    string
	stableSeen, ready bool
}

func (e *env) watchRelease(b *testing.B) *releaseWatch {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &releaseWatch{cancel: cancel, pods: map[string]bool{}, available: map[string]int32{}, minAvail: replicas}
	kf := informers.NewSharedInformerFactoryWithOptions(e.kube, 0, informers.WithNamespace(canaryNS))
	cf := externalversions.NewSharedInformerFactoryWithOptions(e.apps, 0, externalversions.WithNamespace(canaryNS))
	handler := func(f func(obj any, deleted bool)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { f(obj, false) },
			UpdateFunc: func(_, obj any) { f(obj, false) },
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				f(obj, true)
			},
		}
	}
	_, _ = kf.Core().V1().Pods().Informer().AddEventHandler(handler(w.pod))
	_, _ = kf.Apps().V1().Deployments().Informer().AddEventHandler(handler(w.deployment))
	_, _ = cf.Apps().V1alpha1().Canaries().Informer().AddEventHandler(handler(w.canary))
	kf.Start(ctx.Done())
	cf.Start(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	cf.WaitForCacheSync(ctx.Done())
	return w
}

func (w *releaseWatch) stop() { w.cancel() }

func (w *releaseWatch) pod(obj any, deleted bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	live := !deleted && podRunsOn(p)
	if live {
		w.pods[p.Name] = p.Labels["app"] == "stable"
	} else {
		delete(w.pods, p.Name)
	}
	w.peak = max(w.peak, len(w.pods))
	stable := 0
	for _, s := range w.pods {
		if s {
			stable++
		}
	}
	if stable > 0 {
		w.stableSeen, w.stableGone = true, time.Time{}
	} else if w.stableSeen && w.stableGone.IsZero() {
		w.stableGone = time.Now()
	}
}

func (w *releaseWatch) deployment(obj any, deleted bool) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.available[d.Name] = d.Status.AvailableReplicas
	if deleted {
		w.available[d.Name] = 0
	}
	sum := int(w.available["stable"] + w.available["canary"])
	if sum >= replicas {
		w.ready = true // the stable Deployment was whole when the watch began
	}
	if w.ready {
		w.minAvail = min(w.minAvail, sum)
	}
}

func (w *releaseWatch) canary(obj any, _ bool) {
	c, ok := obj.(*appsv1alpha1.Canary)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase, w.message = string(c.Status.Phase), c.Status.Message
	if c.Status.Phase == appsv1alpha1.CanaryCompleted && c.Status.ObservedGeneration == c.Generation && w.completed.IsZero() {
		w.completed = time.Now()
	}
}

func (w *releaseWatch) completedState() (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.completed.IsZero(), fmt.Sprintf("%s: %s; %d pods", w.phase, w.message, len(w.pods))
}

func (w *releaseWatch) figures() (peak, minAvailable int, completed, stableGone time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak, w.minAvail, w.completed, w.stableGone
}
