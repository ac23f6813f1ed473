package expectations

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultTTL bounds how long a controller waits for events it expects. It
// only has to outlast normal informer lag; once it passes, the controller
// falls back to trusting its cache, accepting a possible duplicate over being
// stuck forever behind a lost event.
const DefaultTTL = 5 * time.Minute

// Option configures a ControllerExpectations or
// UIDTrackingControllerExpectations.
type Option func(*config)

type config struct {
	ttl   time.Duration
	clock clock.PassiveClock
}

// WithTTL overrides DefaultTTL. Non-positive values are ignored: a record
// that never expires would let one lost watch event wedge a controller.
func WithTTL(ttl time.Duration) Option {
	return func(c *config) {
		if ttl > 0 {
			c.ttl = ttl
		}
	}
}

// WithClock injects the clock used to timestamp and expire records, so tests
// can drive expiry with k8s.io/utils/clock/testing instead of sleeping.
func WithClock(c clock.PassiveClock) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// Expectations is a point-in-time copy of one controller's record. It is a
// copy rather than a live pointer so callers can inspect it without holding
// the lock that informer handlers need to make progress.
type Expectations struct {
	// Add is the number of creations not yet observed. It can go negative
	// when more creations are observed than were expected (for example a
	// pod adopted after the expectation was set); that still reads as
	// fulfilled.
	Add int
	// Del is the number of deletions not yet observed, with the same
	// negative-is-fulfilled rule as Add.
	Del int
	// Timestamp is when the writes being waited for were last issued; the
	// record expires TTL after it.
	Timestamp time.Time
}

// Fulfilled reports whether every expected event has been observed.
func (e Expectations) Fulfilled() bool {
	return e.Add <= 0 && e.Del <= 0
}

// Interface is what a controller's sync loop and informer handlers need.
// Controllers should depend on it so tests can substitute their own
// implementation.
type Interface interface {
	GetExpectations(controllerKey string) (Expectations, bool)
	SatisfiedExpectations(controllerKey string) bool
	DeleteExpectations(controllerKey string)
	SetExpectations(controllerKey string, add, del int)
	ExpectCreations(controllerKey string, adds int)
	ExpectDeletions(controllerKey string, dels int)
	CreationObserved(controllerKey string)
	DeletionObserved(controllerKey string)
	RaiseExpectations(controllerKey string, add, del int)
	LowerExpectations(controllerKey string, add, del int)
}

var _ Interface = (*ControllerExpectations)(nil)

// record is the mutable state behind Expectations. deleteKeys is only used by
// UIDTrackingControllerExpectations; keeping it in the same record under the
// same lock means a count and its key set can never disagree.
type record struct {
	add, del   int
	timestamp  time.Time
	deleteKeys sets.Set[string]
}

// store holds the records shared by both expectation kinds. One mutex guards
// the whole map: operations are a few integer updates, and a single lock makes
// check-then-update sequences (observe only if tracked, raise from a clamped
// base) atomic without further care.
type store struct {
	mu      sync.Mutex
	ttl     time.Duration
	clock   clock.PassiveClock
	records map[string]*record
}

func newStore(opts []Option) store {
	cfg := config{ttl: DefaultTTL, clock: clock.RealClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	return store{ttl: cfg.ttl, clock: cfg.clock, records: map[string]*record{}}
}

func (s *store) get(key string) (Expectations, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		return Expectations{}, false
	}
	return Expectations{Add: r.add, Del: r.del, Timestamp: r.timestamp}, true
}

func (s *store) satisfied(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		// No record means the controller has nothing in flight (or the
		// record was dropped with the object), so its cache is as good as
		// it gets: let the sync run.
		klog.V(4).InfoS("Controller has no expectations; syncing", "controller", key)
		return true
	}
	if r.add <= 0 && r.del <= 0 {
		klog.V(4).InfoS("Controller expectations fulfilled", "controller", key, "add", r.add, "del", r.del)
		return true
	}
	if age := s.clock.Since(r.timestamp); age > s.ttl {
		klog.V(4).InfoS("Controller expectations expired; syncing anyway", "controller", key, "add", r.add, "del", r.del, "age", age)
		return true
	}
	klog.V(4).InfoS("Controller still waiting on expectations", "controller", key, "add", r.add, "del", r.del)
	return false
}

func (s *store) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}

// set replaces the record wholesale, including any tracked delete keys: a new
// round of writes makes whatever the previous round was waiting for moot.
func (s *store) set(key string, add, del int, deleteKeys sets.Set[string]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.records[key]; ok && old.deleteKeys.Len() > 0 {
		klog.V(4).InfoS("Replacing expectations with delete keys still outstanding", "controller", key, "keys", sets.List(old.deleteKeys))
	}
	s.records[key] = &record{add: add, del: del, timestamp: s.clock.Now(), deleteKeys: deleteKeys}
	klog.V(4).InfoS("Set controller expectations", "controller", key, "add", add, "del", del)
}

func (s *store) raise(key string, add, del int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		// Dropping the raise would let the next sync trust a cache that
		// does not yet show these writes — the duplicate-pod case this
		// package exists to prevent — so start a record instead.
		r = &record{}
		s.records[key] = r
	}
	// Surplus observations are not credit against future writes: a record
	// at add=-1 raised by one must wait for one more creation, not read as
	// already fulfilled.
	r.add = max(r.add, 0) + add
	r.del = max(r.del, 0) + del
	// The TTL measures how long we have waited for the writes just issued,
	// so restart it; otherwise freshly raised expectations could expire
	// almost immediately on an old record.
	r.timestamp = s.clock.Now()
	klog.V(4).InfoS("Raised controller expectations", "controller", key, "add", r.add, "del", r.del)
}

func (s *store) lower(key string, add, del int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lowerLocked(key, add, del)
}

// lowerLocked ignores keys without a record: the event belongs to writes the
// controller is not waiting for (or no longer tracks), and inventing a
// negative record would only hide a later real expectation.
func (s *store) lowerLocked(key string, add, del int) {
	r, ok := s.records[key]
	if !ok {
		return
	}
	r.add -= add
	r.del -= del
	klog.V(4).InfoS("Lowered controller expectations", "controller", key, "add", r.add, "del", r.del)
}

// ControllerExpectations counts, per controller key (namespace/name), the
// creations and deletions a controller has issued but not yet observed
// through its informers. The zero value is not usable; construct it with
// NewControllerExpectations. It is safe for concurrent use.
type ControllerExpectations struct {
	s store
}

// NewControllerExpectations returns an empty ControllerExpectations using
// DefaultTTL and the real clock unless overridden by opts.
func NewControllerExpectations(opts ...Option) *ControllerExpectations {
	return &ControllerExpectations{s: newStore(opts)}
}

// GetExpectations returns a copy of the record for controllerKey and whether
// one exists.
func (e *ControllerExpectations) GetExpectations(controllerKey string) (Expectations, bool) {
	return e.s.get(controllerKey)
}

// SatisfiedExpectations reports whether the controller's informer cache can be
// trusted for a sync: true when there is no record, when every expected event
// has been observed, or when the record has outlived the TTL.
func (e *ControllerExpectations) SatisfiedExpectations(controllerKey string) bool {
	return e.s.satisfied(controllerKey)
}

// DeleteExpectations forgets controllerKey. Call it when the controller object
// itself is deleted, so its record does not leak and a recreated object with
// the same name starts unencumbered.
func (e *ControllerExpectations) DeleteExpectations(controllerKey string) {
	e.s.remove(controllerKey)
}

// SetExpectations replaces the record for controllerKey with the given counts
// and restarts its TTL. Call it before issuing the writes, never after: an
// event that arrives before the record exists is lost, and the controller
// would wait out the full TTL.
func (e *ControllerExpectations) SetExpectations(controllerKey string, add, del int) {
	e.s.set(controllerKey, add, del, nil)
}

// ExpectCreations is SetExpectations(controllerKey, adds, 0).
func (e *ControllerExpectations) ExpectCreations(controllerKey string, adds int) {
	e.s.set(controllerKey, adds, 0, nil)
}

// ExpectDeletions is SetExpectations(controllerKey, 0, dels).
func (e *ControllerExpectations) ExpectDeletions(controllerKey string, dels int) {
	e.s.set(controllerKey, 0, dels, nil)
}

// CreationObserved records one expected creation as seen. Controllers also
// call it when a create request fails, because no event will ever arrive for
// a pod that was never created.
func (e *ControllerExpectations) CreationObserved(controllerKey string) {
	e.s.lower(controllerKey, 1, 0)
}

// DeletionObserved records one expected deletion as seen. As with
// CreationObserved, call it for a delete request that failed.
func (e *ControllerExpectations) DeletionObserved(controllerKey string) {
	e.s.lower(controllerKey, 0, 1)
}

// RaiseExpectations adds to the outstanding counts, for controllers that
// issue writes in several batches within one sync. Counts below zero are
// treated as zero before adding, a missing record is created, and the TTL
// restarts.
func (e *ControllerExpectations) RaiseExpectations(controllerKey string, add, del int) {
	e.s.raise(controllerKey, add, del)
}

// LowerExpectations subtracts from the outstanding counts, e.g. when part of a
// batch was skipped. It does nothing if there is no record.
func (e *ControllerExpectations) LowerExpectations(controllerKey string, add, del int) {
	e.s.lower(controllerKey, add, del)
}
