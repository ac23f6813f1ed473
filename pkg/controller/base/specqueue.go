package base

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/worker"
)

// SpecQueueSuffix ends the name of a controller's spec queue ("tapp-spec"), in logs and metrics.
const SpecQueueSuffix = "-spec"

// UseSpecQueue gives the controller a spec queue (docs/architecture.md, "The spec queue"): an
// update that carries a new generation (a user's edit of the spec, a promote) enqueues the
// object there instead of on the main queue, and Run gives the spec queue workers of its own, so
// that a changed spec is answered ahead of every sync that waits for pods in the main queue. Both
// queues' syncs run exclusive of each other (Running). Call it before the handlers are built.
func (b *Base) UseSpecQueue() {
	b.Spec = workqueue.NewTypedRateLimitingQueueWithConfig(RateLimiter(), workqueue.TypedRateLimitingQueueConfig[Key]{Name: b.Name + SpecQueueSuffix})
	b.Running = NewExclusive()
}

// NewGeneration reports whether an update event carries a new generation: the object's spec
// changed (metadata.generation moves on spec changes only).
func NewGeneration(old, cur any) bool {
	o, err1 := meta.Accessor(old)
	c, err2 := meta.Accessor(cur)
	return err1 == nil && err2 == nil && o.GetGeneration() != c.GetGeneration()
}

// EnqueueUpdate adds the object of an update event to the spec queue when the update carries a
// new generation and the controller has one, else to the main queue.
func (b *Base) EnqueueUpdate(old, cur any) {
	if b.Spec != nil && NewGeneration(old, cur) {
		o, err := meta.Accessor(cur)
		if err == nil {
			b.Spec.Add(Key{Namespace: o.GetNamespace(), Name: o.GetName()})
			return
		}
	}
	b.Enqueue(cur)
}

// runQueues runs workers on the main queue and on the spec queue, each sync exclusive of the
// other queue's, until ctx is done.
func (b *Base) runQueues(ctx context.Context, workers int, reconcile func(context.Context, Key) error) {
	var wg sync.WaitGroup
	wg.Go(func() {
		worker.Queue[Key]{Name: b.Name + SpecQueueSuffix, Queue: b.Spec, Sync: b.Running.Wrap(b.Spec, reconcile), Lagging: b.Lagging}.Run(ctx, workers)
	})
	worker.Queue[Key]{Name: b.Name, Queue: b.Queue, Sync: b.Running.Wrap(b.Queue, reconcile), Lagging: b.Lagging}.Run(ctx, workers)
	wg.Wait()
}
