package tapp

import (
	"sync"
	"sync/atomic"
)

// statusOrder keeps a TApp's status writes in the order of the observations they were computed
// from (docs/architecture.md, "Two client budgets and the TApp's status queue"). The status queue
// does not wait for a main or spec sync of the same TApp to end: that sync may spend seconds on
// pod writes under load, and a status computed meanwhile from a later observation of the pods
// must not be overwritten by the older one that sync computed before its writes. Every sync takes
// a number before it reads the caches (observe); status writes of one TApp run one at a time, and
// one computed from an earlier observation than the last written is skipped.
type statusOrder struct {
	seq  atomic.Uint64
	mu   sync.Mutex
	keys map[string]*keyOrder
}

// keyOrder is one TApp's: its status writes run under mu; written is the observation of the last.
type keyOrder struct {
	mu      sync.Mutex
	written uint64
}

func newStatusOrder() *statusOrder { return &statusOrder{keys: map[string]*keyOrder{}} }

// observe numbers an observation about to be read from the caches.
func (o *statusOrder) observe() uint64 { return o.seq.Add(1) }

func (o *statusOrder) key(key string) *keyOrder {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := o.keys[key]
	if k == nil {
		k = &keyOrder{}
		o.keys[key] = k
	}
	return k
}

// write runs the status write w computed from observation seq, unless the status of a later
// observation was written already; must runs it all the same (a failure only that sync can
// report). stale says a later observation's status was written before: the caller has the
// latest status written again.
func (o *statusOrder) write(key string, seq uint64, must bool, w func() error) (ran, stale bool, err error) {
	k := o.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	stale = seq < k.written
	if stale && !must {
		return false, true, nil
	}
	if err := w(); err != nil {
		return true, stale, err
	}
	k.written = max(k.written, seq)
	return true, stale, nil
}

// forget drops a deleted TApp's entry.
func (o *statusOrder) forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.keys, key)
}
