package e2eenv

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// PodCheck returns the violations of an invariant in the pods seen (by UID). It runs on the
// watcher's goroutine, after every pod change.
type PodCheck func(pods map[types.UID]*corev1.Pod) []string

// PodWatcher watches the pods of a label selector and checks an invariant on each change, so
// that a state the API server went through for a moment is caught, not only the states a poll
// happens to see.
type PodWatcher struct {
	name       string
	mu         sync.Mutex
	check      PodCheck
	events     int
	violations []string
	reported   bool
	cancel     context.CancelFunc
	watch      watch.Interface
	done       chan struct{}
}

// WatchPods starts a PodWatcher named name (for its messages) on the test's namespace. It
// checks the pods as listed first, then after each change. It stops when the test ends;
// Verify reports what it saw.
func (e *Env) WatchPods(name, selector string, check PodCheck) *PodWatcher {
	e.T.Helper()
	ctx, cancel := context.WithCancel(e.Ctx)
	// List first and watch from the list's version: a watch without a version would replay the
	// existing pods one ADDED event at a time, through states with most of them missing.
	list, err := e.Kube.CoreV1().Pods(e.NS).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		cancel()
		e.T.Fatal(err)
	}
	pods := map[types.UID]*corev1.Pod{}
	for i := range list.Items {
		pods[list.Items[i].UID] = &list.Items[i]
	}
	w, err := e.Kube.CoreV1().Pods(e.NS).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		cancel()
		e.T.Fatal(err)
	}
	pw := &PodWatcher{name: name, check: check, cancel: cancel, watch: w, done: make(chan struct{})}
	pw.run(pods, false)
	go func() {
		defer close(pw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Deleted:
				delete(pods, p.UID)
			case watch.Added, watch.Modified:
				pods[p.UID] = p
			default:
				continue
			}
			pw.run(pods, true)
		}
	}()
	e.T.Cleanup(pw.stop)
	return pw
}

func (pw *PodWatcher) run(pods map[types.UID]*corev1.Pod, event bool) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if event {
		pw.events++
	}
	pw.violations = append(pw.violations, pw.check(pods)...)
}

func (pw *PodWatcher) stop() {
	pw.cancel()
	pw.watch.Stop() // the end of the context alone does not end every watch.Interface
	<-pw.done
}

// Verify stops the watcher and fails the test with the violations it saw (the first ten), or
// if it saw no pod change at all. It reports once; later calls do nothing.
func (pw *PodWatcher) Verify(t testing.TB) {
	t.Helper()
	pw.stop()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.reported {
		return
	}
	pw.reported = true
	if pw.events == 0 {
		t.Fatalf("the %s watcher saw no pod event", pw.name)
	}
	for i, v := range pw.violations {
		if i == 10 {
			t.Errorf("… and %d more", len(pw.violations)-10)
			break
		}
		t.Error(v)
	}
	t.Logf("%s watcher: %d pod events", pw.name, pw.events)
}
