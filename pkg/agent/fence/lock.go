package fence

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Lock wraps a leader election lock so that the fence follows the Lease: a successful create or
// update that makes this agent the holder opens (or extends) the fence from the instant the
// request was sent; giving the Lease up closes it before the request is sent.
//
// It also refuses, locally, to release a Lease this agent may no longer hold: client-go's
// release decides from the record it last observed, which after a freeze can be older than the
// Get it just made, and would then overwrite the new leader's record.
func (f *Fence) Lock(l resourcelock.Interface) resourcelock.Interface {
	return &lock{Interface: l, fence: f}
}

type lock struct {
	resourcelock.Interface
	fence *Fence

	mu         sync.Mutex
	lastHolder string // holder in the record last read
}

func (l *lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec != nil {
		l.mu.Lock()
		l.lastHolder = rec.HolderIdentity
		l.mu.Unlock()
	}
	return rec, raw, err
}

func (l *lock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, rec, l.Interface.Create)
}

func (l *lock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, rec, l.Interface.Update)
}

func (l *lock) write(ctx context.Context, rec resourcelock.LeaderElectionRecord, do func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	if rec.HolderIdentity != l.Identity() {
		// A release. Close the fence first: nothing may be written once the Lease is free.
		wasOpen := l.fence.Check() == nil
		l.fence.Revoke()
		l.mu.Lock()
		holder := l.lastHolder
		l.mu.Unlock()
		if !wasOpen || holder != l.Identity() {
			return fmt.Errorf("not releasing Lease %s: this agent may no longer hold it (last read holder %q): %w", l.Describe(), holder, ErrClosed)
		}
		return do(ctx, rec)
	}
	sent := l.fence.clock.Now()
	if err := do(ctx, rec); err != nil {
		return err
	}
	l.mu.Lock()
	l.lastHolder = rec.HolderIdentity
	l.mu.Unlock()
	l.fence.Renewed(sent, time.Duration(rec.LeaseDurationSeconds)*time.Second)
	return nil
}
