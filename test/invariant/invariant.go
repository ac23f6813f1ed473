// Package invariant watches what a rollout must never break, for end-to-end and chaos tests that
// disturb the control plane or the agent: a TApp's availability budget and the uniqueness of its
// instances, and a Canary's capacity. The watchers use informers, so they relist and carry on
// across API server restarts and expired watches; every state they see is checked.
package invariant

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// maxKept bounds the violations a watcher keeps; more are counted.
const maxKept = 50

// Watcher checks every state its informer sees. Stop it, then read what it saw.
type Watcher struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	events     int
	violations []string
	dropped    int
	worst      string // the worst state seen, for the log
	check      func(store cache.Store) (violations []string, worst string)
	worstScore int
	score      func(store cache.Store) int
	// onViolation, when set, is called with each violation as it is seen.
	onViolation func(string)
}

// OnViolation has f called with every violation the watcher sees from now on, at the moment it
// sees it (and at once with those it saw already), so that a test can fail then and there
// rather than when it stops the watcher. f runs on the watcher's goroutine, holding its lock:
// it must not call the watcher's methods.
func (w *Watcher) OnViolation(f func(violation string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onViolation = f
	for _, v := range w.violations {
		f(v)
	}
}

// Stop stops the watcher; later calls do nothing.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}

// Events is how many object states the watcher checked.
func (w *Watcher) Events() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events
}

// Violations returns what broke the invariant, in order (at most 50, then a count).
func (w *Watcher) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]string(nil), w.violations...)
	if w.dropped > 0 {
		out = append(out, fmt.Sprintf("… and %d more", w.dropped))
	}
	return out
}

// Count is the number of violations.
func (w *Watcher) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.violations) + w.dropped
}

// Worst describes the worst state seen.
func (w *Watcher) Worst() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.worst
}

// start runs w's informer over lw, a list and watch through kube (which says whether it serves
// watch-list streams: a fake clientset does not).
func start[T runtime.Object](ctx context.Context, kube kubernetes.Interface, lw *cache.ListWatch, obj T, w *Watcher) *Watcher {
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, kube), obj, 0, cache.Indexers{})
	onChange := func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.events++
		vs, desc := w.check(inf.GetStore())
		if s := w.score(inf.GetStore()); s > w.worstScore || w.worst == "" {
			w.worstScore, w.worst = s, desc
		}
		for _, v := range vs {
			if w.onViolation != nil {
				w.onViolation(v)
			}
			if len(w.violations) < maxKept {
				w.violations = append(w.violations, time.Now().Format("15:04:05.000 ")+v)
			} else {
				w.dropped++
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { onChange() },
		UpdateFunc: func(any, any) { onChange() },
		DeleteFunc: func(any) { onChange() },
	})
	go func() {
		defer close(w.done)
		inf.RunWithContext(ctx)
	}()
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	return w
}

// TApp watches the TApp's pods: at no time may two live pods (not terminating) hold the same
// instance id, or more than maxUnavailable of the instances 0..replicas-1 lack a Ready pod. Start
// it once the TApp's pods are all available.
func TApp(ctx context.Context, kube kubernetes.Interface, ns, name string, replicas, maxUnavailable int) *Watcher {
	lw := podListWatch(kube, ns, appsv1alpha1.LabelTAppName+"="+name)
	unavailable := func(store cache.Store) (int, map[int][]string) {
		live, ready := map[int][]string{}, map[int]bool{}
		for _, o := range store.List() {
			p := o.(*corev1.Pod)
			if p.DeletionTimestamp != nil {
				continue
			}
			id, err := strconv.Atoi(p.Labels[appsv1alpha1.LabelInstanceID])
			if err != nil {
				id = -1
			}
			live[id] = append(live[id], p.Name)
			if e2eenv.PodReady(p) {
				ready[id] = true
			}
		}
		n := 0
		for id := range replicas {
			if !ready[id] {
				n++
			}
		}
		return n, live
	}
	w := &Watcher{
		score: func(store cache.Store) int { n, _ := unavailable(store); return n },
		check: func(store cache.Store) ([]string, string) {
			n, live := unavailable(store)
			var vs []string
			for id, names := range live {
				if len(names) > 1 {
					vs = append(vs, fmt.Sprintf("TApp %s/%s: instance %d has %d live pods %v", ns, name, id, len(names), names))
				}
			}
			if n > maxUnavailable {
				vs = append(vs, fmt.Sprintf("TApp %s/%s: %d instances unavailable (at most %d allowed)", ns, name, n, maxUnavailable))
			}
			return vs, fmt.Sprintf("%d instances unavailable", n)
		},
	}
	return start(ctx, kube, lw, &corev1.Pod{}, w)
}

// Capacity watches the Deployments stable and canary of a Canary: at no time may their available
// pods add up to less than replicas. Start it once the stable Deployment is all available.
func Capacity(ctx context.Context, kube kubernetes.Interface, ns, stable, canary string, replicas int32) *Watcher {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return kube.AppsV1().Deployments(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return kube.AppsV1().Deployments(ns).Watch(ctx, o)
		},
	}
	available := func(store cache.Store) (int32, string) {
		var sum int32
		desc := ""
		for _, n := range []string{stable, canary} {
			o, ok, _ := store.GetByKey(ns + "/" + n)
			if !ok {
				desc += fmt.Sprintf(" %s absent", n)
				continue
			}
			d := o.(*appsv1.Deployment)
			sum += d.Status.AvailableReplicas
			desc += fmt.Sprintf(" %s %d/%d", n, d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 1))
		}
		return sum, desc
	}
	w := &Watcher{
		score: func(store cache.Store) int { n, _ := available(store); return int(replicas - n) },
		check: func(store cache.Store) ([]string, string) {
			n, desc := available(store)
			if n < replicas {
				return []string{fmt.Sprintf("Canary capacity %d < %d:%s", n, replicas, desc)}, fmt.Sprintf("%d available:%s", n, desc)
			}
			return nil, fmt.Sprintf("%d available:%s", n, desc)
		},
	}
	return start(ctx, kube, lw, &appsv1.Deployment{}, w)
}

// Surge watches the pods of a Canary's two Deployments (selector matches both): at no time may
// more than limit (replicas + maxSurge) exist, terminating ones included, since they still hold
// their node's resources until they are gone.
func Surge(ctx context.Context, kube kubernetes.Interface, ns, selector string, limit int) *Watcher {
	lw := podListWatch(kube, ns, selector)
	pods := func(store cache.Store) int {
		n := 0
		for _, o := range store.List() {
			if p := o.(*corev1.Pod); p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				n++
			}
		}
		return n
	}
	w := &Watcher{
		score: pods,
		check: func(store cache.Store) ([]string, string) {
			n := pods(store)
			if n > limit {
				return []string{fmt.Sprintf("%d pods of %s > replicas + maxSurge = %d", n, selector, limit)}, fmt.Sprintf("%d pods", n)
			}
			return nil, fmt.Sprintf("%d pods", n)
		},
	}
	return start(ctx, kube, lw, &corev1.Pod{}, w)
}

// podListWatch lists and watches the pods of ns that selector selects.
func podListWatch(kube kubernetes.Interface, ns, selector string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return kube.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return kube.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}
}
