// Package base is what every controller of the agent shares (docs/architecture.md, "The picture"): the work queue keyed
// by cache.ObjectName with one rate limiter, the event handlers that enqueue an object or the
// owner of a child, the wait for informer caches, the workers (pkg/controller/worker, which
// counts every reconcile under the controller's name) and the names an operator sees in Events,
// logs and metrics. A controller embeds a *Base and adds its listers, its plan and its writes.
package base

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/worker"
)

// Key names one reconciled object.
type Key = cache.ObjectName

// Base is the part of a controller every controller has.
type Base struct {
	// Name names the controller in its queue, logs and metrics ("tapp").
	Name string
	// Kind is the kind it reconciles, in metrics labels and controller references.
	Kind schema.GroupVersionKind
	// Queue holds the keys to sync.
	Queue workqueue.TypedRateLimitingInterface[Key]
	// Spec, nil unless UseSpecQueue, holds the keys of objects whose spec changed; Running keeps
	// its syncs and the main queue's apart (specqueue.go).
	Spec    workqueue.TypedRateLimitingInterface[Key]
	Running *Exclusive
	// Recorder reports Events as EventComponent(Name).
	Recorder record.EventRecorder
	// Lagging reports errors that only mean the cache lagged the controller's own writes
	// (logged quietly, requeued like any error); nil means conflicts only.
	Lagging func(error) bool

	synced []cache.InformerSynced
}

// EventComponent is the component a controller's Events are reported as: "<name>-controller".
func EventComponent(name string) string { return name + "-controller" }

// New returns the base of the controller name reconciling kind (one of ours).
func New(name, kind string, recorder record.EventRecorder) *Base {
	return &Base{
		Name:     name,
		Kind:     v1alpha1.SchemeGroupVersion.WithKind(kind),
		Queue:    workqueue.NewTypedRateLimitingQueueWithConfig(RateLimiter(), workqueue.TypedRateLimitingQueueConfig[Key]{Name: name}),
		Recorder: recorder,
	}
}

// RateLimiter is every controller's: per-key exponential backoff from 5 ms to 1000 s, and an
// overall 50 per second (burst 300) so that a storm of failures cannot flood the API server.
func RateLimiter() workqueue.TypedRateLimiter[Key] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[Key](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[Key]{Limiter: rate.NewLimiter(rate.Limit(50), 300)},
	)
}

// Watch registers handler on informer and waits for it in Run.
func (b *Base) Watch(informer cache.SharedIndexInformer, handler cache.ResourceEventHandler) error {
	if _, err := informer.AddEventHandler(handler); err != nil {
		return fmt.Errorf("%s: adding event handler: %w", b.Name, err)
	}
	b.synced = append(b.synced, informer.HasSynced)
	return nil
}

// WaitFor adds informers Run waits for that the controller reads but does not watch.
func (b *Base) WaitFor(synced ...cache.InformerSynced) {
	b.synced = append(b.synced, synced...)
}

// ObjectHandler enqueues the reconciled object itself on every event (an update with a new
// generation on the spec queue, when the controller has one).
func (b *Base) ObjectHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    b.Enqueue,
		UpdateFunc: b.EnqueueUpdate,
		DeleteFunc: b.Enqueue,
	}
}

// Enqueue adds an object (or the tombstone of a deleted one) to the queue.
func (b *Base) Enqueue(obj any) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	b.Queue.Add(cache.MetaObjectToName(o))
}

// IsOurs reports whether a controller reference points to this controller's kind.
func (b *Base) IsOurs(ref *metav1.OwnerReference) bool {
	return ref != nil && ref.Kind == b.Kind.Kind && ref.APIVersion == b.Kind.GroupVersion().String()
}

// Run waits for the caches of every watched informer, runs workers that sync keys until ctx is
// done, then shuts the queue down and returns once the workers have finished their items.
func (b *Base) Run(ctx context.Context, workers int, sync func(context.Context, Key) error) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx).WithValues("controller", b.Name)
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting controller", "workers", max(workers, 1))
	defer logger.Info("Stopped controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, b.synced...) {
		b.Queue.ShutDown()
		if b.Spec != nil {
			b.Spec.ShutDown()
		}
		return
	}
	if b.Spec != nil {
		b.runQueues(ctx, workers, sync)
		return
	}
	worker.Queue[Key]{Name: b.Name, Queue: b.Queue, Sync: sync, Lagging: b.Lagging}.Run(ctx, workers)
}
