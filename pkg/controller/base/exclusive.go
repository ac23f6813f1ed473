package base

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Exclusive keeps a controller's queues from syncing one key at once (each workqueue keeps its
// own keys apart, not another queue's): a sync that finds its key taken leaves it to be queued
// again, on its own queue, when the running sync ends. So a controller with several queues still
// syncs each object once at a time (docs/architecture.md, "The spec queue").
type Exclusive struct {
	mu      sync.Mutex
	running map[string][]func()
}

// NewExclusive returns an Exclusive with no key taken.
func NewExclusive() *Exclusive { return &Exclusive{running: map[string][]func(){}} }

// Begin takes key, or, when a sync of it runs, records again to be called when that sync ends
// and returns false.
func (x *Exclusive) Begin(key string, again func()) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if waiting, ok := x.running[key]; ok {
		x.running[key] = append(waiting, again)
		return false
	}
	x.running[key] = nil
	return true
}

// End releases key and calls what was left to be called (outside the lock).
func (x *Exclusive) End(key string) {
	x.mu.Lock()
	again := x.running[key]
	delete(x.running, key)
	x.mu.Unlock()
	for _, f := range again {
		f()
	}
}

// Wrap returns sync run exclusive of every other sync of x; a key found taken is added to queue
// again when the running sync ends.
func (x *Exclusive) Wrap(queue workqueue.TypedInterface[Key], sync func(context.Context, Key) error) func(context.Context, Key) error {
	return func(ctx context.Context, name Key) error {
		key := name.String()
		if !x.Begin(key, func() { queue.Add(name) }) {
			return nil
		}
		defer x.End(key)
		return sync(ctx, name)
	}
}
