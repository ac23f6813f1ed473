package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

func newQueue() workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
}

// A key that syncs is forgotten; one that fails is requeued with backoff; every sync is counted
// under the controller's name with its result.
func TestProcessNextForgetsSuccessAndRequeuesErrors(t *testing.T) {
	q := Queue[string]{Name: "worker-test", Queue: newQueue(), Sync: func(_ context.Context, key string) error {
		if key == "bad" {
			return errors.New("boom")
		}
		return nil
	}}
	defer q.Queue.ShutDown()
	before := reconciles(t, "worker-test")
	q.Queue.Add("good")
	q.Queue.Add("bad")
	for range 2 {
		if !processNextOrFail(t, &q) {
			t.Fatal("queue shut down")
		}
	}
	if n := q.Queue.NumRequeues("good"); n != 0 {
		t.Errorf("good requeued %d times", n)
	}
	if n := q.Queue.NumRequeues("bad"); n != 1 {
		t.Errorf("bad requeued %d times, want 1", n)
	}
	after := reconciles(t, "worker-test")
	if after["success"]-before["success"] != 1 || after["error"]-before["error"] != 1 {
		t.Errorf("reconciles counted %v → %v, want one success and one error more", before, after)
	}
}

func TestLaggingErrorsAreRequeuedToo(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "tapps"}, "web", errors.New("changed"))
	q := Queue[string]{Name: "worker-test-lag", Queue: newQueue(), Sync: func(context.Context, string) error { return conflict }}
	defer q.Queue.ShutDown()
	q.Queue.Add("web")
	processNextOrFail(t, &q)
	if n := q.Queue.NumRequeues("web"); n != 1 {
		t.Errorf("a conflict was requeued %d times, want 1", n)
	}
}

// Run drains nothing after ctx ends: it shuts the queue down and waits for the workers.
func TestRunStopsWhenTheContextEnds(t *testing.T) {
	var mu sync.Mutex
	synced := map[string]bool{}
	done := make(chan struct{})
	q := Queue[string]{Name: "worker-test-run", Queue: newQueue(), Sync: func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		synced[key] = true
		if len(synced) == 3 {
			close(done)
		}
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { q.Run(ctx, 2); close(stopped) }()
	for _, k := range []string{"a", "b", "c"} {
		q.Queue.Add(k)
	}
	waitOrFail(t, done, "the three keys to be synced")
	cancel()
	waitOrFail(t, stopped, "Run to return after its context ended")
	if !q.Queue.ShuttingDown() {
		t.Error("queue not shut down after Run returned")
	}
}

// processNextOrFail runs q.ProcessNext, failing the test, instead of hanging it, when it does not
// return in time (a key lost by the queue would block it in Get).
func processNextOrFail(t *testing.T, q *Queue[string]) bool {
	t.Helper()
	var more bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		more = q.ProcessNext(context.Background())
	}()
	waitOrFail(t, done, "ProcessNext to return")
	return more
}

// waitOrFail fails the test, instead of hanging it, when ch is not closed in time.
func waitOrFail(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func reconciles(t *testing.T, controller string) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "workload_agent_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == controller {
				out[strings.ToLower(labels["result"])] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}
