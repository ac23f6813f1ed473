package expectations

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
)

// UIDTrackingControllerExpectations is ControllerExpectations that also
// remembers which pods (by namespace/name key) it expects to be deleted.
//
// Plain counting is not enough for deletions: a controller typically lowers
// the count both when it sees an update that sets deletionTimestamp (so a
// gracefully terminating pod stops blocking the next sync) and when the final
// delete event arrives, and informers may replay a delete as a tombstone after
// a re-list. Counting each of those would lower the expectation past the pods
// actually gone, and the controller would delete more pods than intended.
// Tracking keys makes each pod count at most once.
//
// The zero value is not usable; construct it with
// NewUIDTrackingControllerExpectations. It is safe for concurrent use.
type UIDTrackingControllerExpectations struct {
	s store
}

// NewUIDTrackingControllerExpectations returns an empty
// UIDTrackingControllerExpectations using DefaultTTL and the real clock
// unless overridden by opts.
func NewUIDTrackingControllerExpectations(opts ...Option) *UIDTrackingControllerExpectations {
	return &UIDTrackingControllerExpectations{s: newStore(opts)}
}

// GetExpectations returns a copy of the counts for controllerKey and whether a
// record exists.
func (u *UIDTrackingControllerExpectations) GetExpectations(controllerKey string) (Expectations, bool) {
	return u.s.get(controllerKey)
}

// GetDeletionKeys returns a copy of the pod keys still expected to be deleted
// for controllerKey, or nil if none are tracked.
func (u *UIDTrackingControllerExpectations) GetDeletionKeys(controllerKey string) sets.Set[string] {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	r, ok := u.s.records[controllerKey]
	if !ok || r.deleteKeys == nil {
		return nil
	}
	return r.deleteKeys.Clone()
}

// SatisfiedExpectations has the same meaning as
// ControllerExpectations.SatisfiedExpectations.
func (u *UIDTrackingControllerExpectations) SatisfiedExpectations(controllerKey string) bool {
	return u.s.satisfied(controllerKey)
}

// DeleteExpectations forgets both the counts and the tracked pod keys for
// controllerKey. Call it when the controller object is deleted.
func (u *UIDTrackingControllerExpectations) DeleteExpectations(controllerKey string) {
	u.s.remove(controllerKey)
}

// ExpectCreations replaces the record for controllerKey with adds expected
// creations, dropping any tracked deletion keys.
func (u *UIDTrackingControllerExpectations) ExpectCreations(controllerKey string, adds int) {
	u.s.set(controllerKey, adds, 0, nil)
}

// CreationObserved records one expected creation as seen (or a create request
// that failed).
func (u *UIDTrackingControllerExpectations) CreationObserved(controllerKey string) {
	u.s.lower(controllerKey, 1, 0)
}

// ExpectDeletions replaces the record for controllerKey with the pods, given as
// namespace/name keys, that the controller is about to delete. Duplicate keys
// count once. Call it before issuing the deletes.
func (u *UIDTrackingControllerExpectations) ExpectDeletions(controllerKey string, deletedKeys []string) {
	keys := sets.New(deletedKeys...)
	u.s.set(controllerKey, 0, keys.Len(), keys)
}

// DeletionObserved records that the pod with key podKey is gone or going. Only
// the first observation of a tracked key lowers the expectation; repeats and
// pods the controller did not ask to delete are ignored. Call it too when a
// delete request fails, so the failed pod no longer blocks the sync.
func (u *UIDTrackingControllerExpectations) DeletionObserved(controllerKey, podKey string) {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	r, ok := u.s.records[controllerKey]
	if !ok || !r.deleteKeys.Has(podKey) {
		return
	}
	r.deleteKeys.Delete(podKey)
	klog.V(4).InfoS("Observed expected deletion", "controller", controllerKey, "pod", podKey)
	u.s.lowerLocked(controllerKey, 0, 1)
}
