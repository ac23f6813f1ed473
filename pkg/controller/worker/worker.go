// Package worker runs a controller's rate-limited work queue, in the style of
// k8s.io/sample-controller: workers that take a key, sync it, forget it on success and requeue it
// with backoff on error. Every controller runs its queue through here, so that every reconcile is
// timed and counted in the agent's metrics and errors that only mean "the cache lagged the API
// server" are logged quietly — no controller can forget one of these.
package worker

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

// Queue is the controller's work queue and how to sync one of its keys.
type Queue[T comparable] struct {
	// Name names the controller in metrics and logs.
	Name  string
	Queue workqueue.TypedRateLimitingInterface[T]
	Sync  func(context.Context, T) error
	// Lagging reports errors that only mean the cache has not caught up with a write yet (the
	// informer event that fixes it is on its way); they are requeued like any error but logged
	// at -v=2 only. Nil means conflicts only.
	Lagging func(error) bool
}

// Run starts workers (at least one) and blocks until ctx is done; then it shuts the queue down
// and returns once the workers have finished the items they were processing.
func (q Queue[T]) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer utilruntime.HandleCrash()
			for q.ProcessNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	q.Queue.ShutDown()
	wg.Wait()
}

// ProcessNext syncs the next key of the queue; it returns false once the queue is shut down.
func (q Queue[T]) ProcessNext(ctx context.Context) bool {
	key, shutdown := q.Queue.Get()
	if shutdown {
		return false
	}
	defer q.Queue.Done(key)

	start := time.Now()
	err := q.Sync(ctx, key)
	metrics.ObserveReconcile(q.Name, start, err)
	if err == nil {
		q.Queue.Forget(key)
		return true
	}
	lagging := q.Lagging
	if lagging == nil {
		lagging = apierrors.IsConflict
	}
	if lagging(err) {
		klog.FromContext(ctx).V(2).Info("Cache behind the API server; requeuing", "controller", q.Name, "key", key, "err", err)
	} else {
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing; requeuing", "controller", q.Name, "key", key)
	}
	q.Queue.AddRateLimited(key)
	return true
}
