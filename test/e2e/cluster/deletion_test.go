package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// A pod re-created under its name (a StatefulSet's, a TApp's instance) is a new pod: whatever
// finished the old one must never delete it. The real kubelet's last delete of a terminating pod
// carries the old pod's UID as a precondition; kwok's, by name only and twice per pod, used to
// delete the new pod when it landed after the re-creation.

// survival is how long the re-created pods are watched after they run.
const survival = 5 * time.Second

// podWatch follows the pods of a namespace from a given resource version, resuming after the
// API server closes the watch (it does so when a watcher falls behind a burst of events).
type podWatch struct {
	t      *testing.T
	events chan watch.Event
}

func watchPods(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, selector, fromVersion string) *podWatch {
	t.Helper()
	w, err := watchtools.NewRetryWatcherWithContext(ctx, fromVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return cs.CoreV1().Pods(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	// Drained at once, so that the test's own waits never hold the watch back.
	pw := &podWatch{t: t, events: make(chan watch.Event, 100000)}
	go func() {
		defer close(pw.events)
		for ev := range w.ResultChan() {
			pw.events <- ev
		}
	}()
	return pw
}

// next returns the next pod event; ok is false once until has passed.
func (pw *podWatch) next(ctx context.Context, until time.Time) (watch.EventType, *corev1.Pod, bool) {
	pw.t.Helper()
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case ev, open := <-pw.events:
		if !open {
			pw.t.Fatal("pod watch closed")
		}
		pod, isPod := ev.Object.(*corev1.Pod)
		if !isPod {
			pw.t.Fatalf("unexpected watch event %s: %#v", ev.Type, ev.Object)
		}
		return ev.Type, pod, true
	case <-timer.C:
		return "", nil, false
	case <-ctx.Done():
		pw.t.Fatal(ctx.Err())
	}
	return "", nil, false
}

// generation tracks the pods of one name: the old UID, the new one and what became of it.
type generation struct {
	old, new        types.UID
	created         time.Time
	running         bool
	deletedNew      bool
	deletedAfter    time.Duration
	deletionStarted bool
}

func runningAndReady(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && e2eenv.PodReady(p)
}

// followRecreation reads pod events until every name in gens has a new pod that runs and is
// Ready (or was deleted), then for survival more. recreate, if set, is called when an old pod
// is gone (as a StatefulSet controller does). It fails the test if a new pod is deleted or
// starts terminating.
func followRecreation(t *testing.T, ctx context.Context, pw *podWatch, gens map[string]*generation, recreate func(name string)) {
	t.Helper()
	deadline := time.Now().Add(e2eenv.Safety)
	var settled time.Time // when every new pod was first seen running
	for {
		until := deadline
		if !settled.IsZero() {
			until = settled.Add(survival)
		}
		typ, pod, ok := pw.next(ctx, until)
		if !ok {
			break
		}
		g := gens[pod.Name]
		if g == nil {
			continue
		}
		switch {
		case pod.UID == g.old:
			if typ == watch.Deleted && recreate != nil {
				recreate(pod.Name)
			}
			continue
		case g.new == "":
			g.new, g.created = pod.UID, time.Now() // created by a controller
		case pod.UID != g.new:
			t.Errorf("pod %s: a third pod (uid %s) after %s and %s", pod.Name, pod.UID, g.old, g.new)
			g.new, g.created = pod.UID, time.Now()
		}
		switch {
		case typ == watch.Deleted:
			g.deletedNew, g.deletedAfter = true, time.Since(g.created)
		case pod.DeletionTimestamp != nil:
			g.deletionStarted = true
		case runningAndReady(pod):
			g.running = true
		}
		if settled.IsZero() {
			all := true
			for _, g := range gens {
				all = all && (g.running || g.deletedNew) // a deleted pod is never coming back
			}
			if all {
				settled = time.Now()
			}
		}
	}
	if settled.IsZero() {
		t.Fatalf("the re-created pods never all ran: %s", describeGenerations(gens))
	}
	var bad []string
	for name, g := range gens {
		switch {
		case g.deletedNew:
			bad = append(bad, fmt.Sprintf("%s (uid %s) deleted %s after it was created (or kwok resumed)", name, g.new, g.deletedAfter.Round(time.Millisecond)))
		case g.deletionStarted:
			bad = append(bad, fmt.Sprintf("%s (uid %s) terminating", name, g.new))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("%d of %d pods re-created under their name were deleted by someone: %s", len(bad), len(gens), strings.Join(bad, "; "))
	}
}

func describeGenerations(gens map[string]*generation) string {
	var out []string
	for name, g := range gens {
		out = append(out, fmt.Sprintf("%s: old %s new %q running %v deleted %v", name, g.old, g.new, g.running, g.deletedNew))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// TestPodRecreatedUnderItsNameSurvives deletes running pods (with the default grace period, so
// that the fake kubelet finishes the deletion) and creates each again the moment it is gone, as
// a StatefulSet or TApp controller does; every new pod must still be there several seconds
// after it runs.
func TestPodRecreatedUnderItsNameSurvives(t *testing.T) {
	t.Parallel()
	ctx, cs, ns := setup(t)
	const n = 100
	newPod := func(name string) *corev1.Pod {
		tmpl := podTemplate("recreated", "registry.invalid/recreated:v1")
		tmpl.Spec.TerminationGracePeriodSeconds = nil // the default, 30 s
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tmpl.Labels}, Spec: tmpl.Spec}
	}
	gens := map[string]*generation{}
	for i := range n {
		name := fmt.Sprintf("p-%d", i)
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, newPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		gens[name] = &generation{}
	}
	var version string
	e2eenv.WaitFor(t, ctx, "pods to run", func(ctx context.Context) (bool, string, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=recreated"})
		if err != nil {
			return false, "", err
		}
		running := 0
		for i := range list.Items {
			if runningAndReady(&list.Items[i]) {
				running++
				gens[list.Items[i].Name].old = list.Items[i].UID
			}
		}
		version = list.ResourceVersion
		return running == n, fmt.Sprintf("%d of %d running", running, n), nil
	})

	pw := watchPods(t, ctx, cs, ns, "app=recreated", version)
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=recreated"}); err != nil {
		t.Fatal(err)
	}
	followRecreation(t, ctx, pw, gens, func(name string) {
		go func() {
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, newPod(name), metav1.CreateOptions{}); err != nil {
				t.Errorf("re-creating %s: %v", name, err)
			}
		}()
	})
}

// TestStatefulSetPodRecreatedSurvives is the same with the StatefulSet controller re-creating
// its pods.
func TestStatefulSetPodRecreatedSurvives(t *testing.T) {
	t.Parallel()
	ctx, cs, ns := setup(t)
	const n = 5
	tmpl := podTemplate("web", "registry.invalid/web:v1")
	tmpl.Spec.TerminationGracePeriodSeconds = nil // the default, 30 s
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            new(int32(n)),
			ServiceName:         "web",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels("web")},
			Template:            tmpl,
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var gens map[string]*generation
	var version string
	e2eenv.WaitFor(t, ctx, "statefulset pods to run", func(ctx context.Context) (bool, string, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, "", err
		}
		gens, version = map[string]*generation{}, list.ResourceVersion
		running := 0
		for i := range list.Items {
			gens[list.Items[i].Name] = &generation{old: list.Items[i].UID}
			if runningAndReady(&list.Items[i]) {
				running++
			}
		}
		return running == n && len(list.Items) == n, fmt.Sprintf("%d pods, %d running and Ready", len(list.Items), running), nil
	})
	for i := range n {
		if g := gens[fmt.Sprintf("web-%d", i)]; g == nil {
			t.Fatalf("no pod web-%d: %s", i, describeGenerations(gens))
		}
	}

	pw := watchPods(t, ctx, cs, ns, "app=web", version)
	for name, g := range gens {
		uid := g.old
		if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
			t.Fatal(err)
		}
	}
	followRecreation(t, ctx, pw, gens, nil)
}

// pauseKwok stops kwok's process until the returned function is called (also at the end of
// the test): kwok then finds its watch events queued, as a kwok that lags behind the API
// server under load does.
func pauseKwok(t *testing.T) (resume func()) {
	t.Helper()
	pid := localcluster.Shared(t).PIDs()[localcluster.Kwok]
	if pid == 0 {
		t.Fatal("kwok is not running")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// TestLaggingKubeletNeverDeletesNewPod makes the fake kubelet see a terminating pod only after
// the pod is gone and a new pod has its name: it must finish the pod it saw, not the name. The
// pods carry a finalizer, so that they stay terminating (after the kubelet's delete, with a
// grace period of 0) until the test removes it; kwok is paused meanwhile and sees, when it
// resumes, an update of each old terminating pod, its deletion and the new pod's creation.
// kwok's pod-delete stage deleted by name and so took every new pod down here.
func TestLaggingKubeletNeverDeletesNewPod(t *testing.T) {
	// Not parallel: pausing kwok would stall the other tests' pods.
	ctx, cs, ns := setup(t)
	const n = 10
	const finalizer = "example.com/hold"
	newPod := func(name string, finalizers ...string) *corev1.Pod {
		tmpl := podTemplate("lagging", "registry.invalid/lagging:v1")
		tmpl.Spec.TerminationGracePeriodSeconds = nil // the default, 30 s
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tmpl.Labels, Finalizers: finalizers}, Spec: tmpl.Spec}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p-%d", i)
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, newPod(names[i], finalizer), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		waitPod(t, ctx, cs, ns, name, "running", runningAndReady)
	}

	// The kubelet's delete: the grace period drops to 0 and the finalizer holds the pod.
	for _, name := range names {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	old := map[string]types.UID{}
	for _, name := range names {
		p := waitPod(t, ctx, cs, ns, name, "finished by the kubelet, held by its finalizer", func(p *corev1.Pod) bool {
			return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
		})
		old[name] = p.UID
	}

	resume := pauseKwok(t)
	fresh := map[string]types.UID{}
	for _, name := range names {
		// Something updates the terminating pod, the finalizer goes (the API server deletes the
		// pod), and the pod's controller creates it again.
		patch := `{"metadata":{"annotations":{"example.com/touched":"true"}}}`
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		patch = fmt.Sprintf(`{"metadata":{"uid":%q,"finalizers":null}}`, old[name])
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := cs.CoreV1().Pods(ns).Create(ctx, newPod(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("re-creating %s: %v", name, err)
		}
		fresh[name] = p.UID
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=lagging"})
	if err != nil {
		t.Fatal(err)
	}
	pw := watchPods(t, ctx, cs, ns, "app=lagging", list.ResourceVersion)
	resume()

	gens := map[string]*generation{}
	resumed := time.Now()
	for _, name := range names {
		gens[name] = &generation{old: old[name], new: fresh[name], created: resumed}
	}
	for _, p := range list.Items {
		if g := gens[p.Name]; g != nil && p.UID == g.new && runningAndReady(&p) {
			g.running = true
		}
	}
	followRecreation(t, ctx, pw, gens, nil)
}
