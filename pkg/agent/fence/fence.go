// Package fence keeps an elected agent from writing once another agent may hold its Lease.
//
// A Fence is open from a successful write of the Lease by its holder until, by the holder's own
// monotonic clock, Validity(lease duration) has passed since that write was sent: no other
// candidate can acquire the Lease sooner (see docs/fencing.md for the argument). Every mutating
// API request of the agent goes through Transport, which refuses it locally while the fence is
// closed, and cancels it if the fence closes while it is in flight. Term gives a context that
// ends when the fence closes, so that controllers stop at once.
package fence

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

const (
	// ClockRateMargin is the largest rate difference assumed between the clocks of two agents:
	// a standby whose clock runs this much faster sees the Lease expire this much sooner.
	ClockRateMargin = 0.05
	// DeliveryMargin is kept between the fence closing and the earliest takeover, for a write
	// admitted just before the fence closed to reach the API server. It is at most a tenth of the
	// lease duration.
	DeliveryMargin = time.Second
)

// ErrClosed is the error of a write refused because the fence is closed.
var ErrClosed = errors.New("fenced: this agent does not hold a valid leader Lease, write refused locally")

// Validity is how long after sending a successful write of the Lease its holder may still write:
// the lease duration shortened by ClockRateMargin and DeliveryMargin.
func Validity(leaseDuration time.Duration) time.Duration {
	delivery := min(DeliveryMargin, leaseDuration/10)
	return time.Duration(float64(leaseDuration)*(1-ClockRateMargin)) - delivery
}

// Fence is open while its holder may write. The zero value is not usable; use New or Open.
type Fence struct {
	clock clock.WithDelayedExecution

	mu       sync.Mutex
	always   bool      // Open: no election, never closes
	until    time.Time // open before this instant (monotonic)
	term     context.Context
	endTerm  context.CancelFunc
	timer    clock.Timer
	onChange func(open bool) // for metrics and logs; called with mu held
}

// New returns a closed fence measured by clk (nil: the real clock).
func New(clk clock.WithDelayedExecution) *Fence {
	if clk == nil {
		clk = clock.RealClock{}
	}
	f := &Fence{clock: clk}
	f.term, f.endTerm = context.WithCancel(context.Background())
	f.endTerm()
	return f
}

// Open returns a fence that is always open: for an agent that runs without leader election.
func Open() *Fence {
	f := New(nil)
	f.always = true
	f.term = context.Background()
	return f
}

// OnChange sets a function called (under the fence's lock, so it must not call back) whenever
// the fence opens or closes.
func (f *Fence) OnChange(fn func(open bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onChange = fn
}

// Renewed records a successful write of the Lease by its holder, sent at sent by the fence's
// clock, with the Lease's duration. The fence stays open until sent + Validity(leaseDuration),
// unless an earlier renewal already keeps it open longer.
func (f *Fence) Renewed(sent time.Time, leaseDuration time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.always {
		return
	}
	until := sent.Add(Validity(leaseDuration))
	now := f.clock.Now()
	if !until.After(now) || !until.After(f.until) {
		return
	}
	wasOpen := now.Before(f.until)
	if !wasOpen {
		// End the last term even if its timer has not fired yet: what ran under it stops, and a
		// new term begins.
		f.closeLocked()
		f.term, f.endTerm = context.WithCancel(context.Background())
	}
	f.until = until
	if f.timer != nil {
		f.timer.Stop()
	}
	// In a goroutine of its own: a fake clock runs the function holding its lock.
	f.timer = f.clock.AfterFunc(until.Sub(now), func() { go f.expire() })
	if !wasOpen {
		f.changed(true)
	}
}

// expire closes the fence when its time is up; a timer that fired late for an extended fence
// does nothing.
func (f *Fence) expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.clock.Now().Before(f.until) {
		return
	}
	f.closeLocked()
}

// Revoke closes the fence now: the holder gives the Lease up (or lost it).
func (f *Fence) Revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.always {
		return
	}
	f.until = time.Time{}
	f.closeLocked()
}

func (f *Fence) closeLocked() {
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	if f.term.Err() == nil {
		f.endTerm()
		f.changed(false)
	}
}

func (f *Fence) changed(open bool) {
	if f.onChange != nil {
		f.onChange(open)
	}
}

// Check returns nil while the fence is open, ErrClosed otherwise. It reads the clock itself, so
// a process resumed after a freeze sees the fence closed even before the timer has fired.
func (f *Fence) Check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.always || f.clock.Now().Before(f.until) {
		return nil
	}
	return ErrClosed
}

// Term returns a context that ends when the fence closes (already ended when it is closed).
// Every opening starts a new term.
func (f *Fence) Term() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.always && !f.clock.Now().Before(f.until) {
		f.closeLocked()
	}
	return f.term
}
