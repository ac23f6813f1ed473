package expectations

import (
	"slices"
	"sync"
)

// StatusWrites remembers a controller's own last status write of each object, for as long as
// its informer cache still shows the version that write was based on. Expectations cover the
// children a controller creates and deletes; this covers the object's own status: while the cache
// lags, a sync would otherwise compare its status with the stale cached one and write again,
// from a stale resourceVersion, only to fail with a conflict.
//
// S is the status type as a pointer (*FooStatus); a recorded status must not be mutated.
type StatusWrites[S any] struct {
	mu sync.Mutex
	m  map[string]statusWrite[S]
}

type statusWrite[S any] struct {
	// baseVersions are the versions the cache may hold from before the write (the one it held
	// when the write was made, and those of the controller's own writes of the object's metadata
	// in the same sync); newVersion the version the write produced.
	baseVersions []string
	newVersion   string
	status       S
}

// NewStatusWrites returns an empty record.
func NewStatusWrites[S any]() *StatusWrites[S] {
	return &StatusWrites[S]{m: map[string]statusWrite[S]{}}
}

// Current returns the status of the object key as far as the controller knows, and the
// resourceVersion to write its next status on: the last write's while the cache still holds
// cachedVersion, a version that write was based on; else the cached status and version (and
// the record is dropped: the cache has caught up, or someone else wrote).
func (w *StatusWrites[S]) Current(key, cachedVersion string, cached S) (S, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.m[key]; ok {
		if slices.Contains(r.baseVersions, cachedVersion) {
			return r.status, r.newVersion
		}
		delete(w.m, key)
	}
	return cached, cachedVersion
}

// Wrote records a status write made on baseVersion that produced newVersion.
func (w *StatusWrites[S]) Wrote(key, baseVersion, newVersion string, status S) {
	w.WroteOver(key, []string{baseVersion}, newVersion, status)
}

// WroteOver records a status write that produced newVersion while the cache may still hold any
// of baseVersions: a sync that patched the object's metadata before its status write leaves
// the cache more than one version to lag behind in.
func (w *StatusWrites[S]) WroteOver(key string, baseVersions []string, newVersion string, status S) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m[key] = statusWrite[S]{baseVersions: slices.Clone(baseVersions), newVersion: newVersion, status: status}
}

// Forget drops the record of key: its write failed, or the object is gone.
func (w *StatusWrites[S]) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}
