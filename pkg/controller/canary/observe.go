package canary

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// observed is what one sync reads from the listers, overlaid with the controller's own writes
// that the cache does not show yet: everything the plan is a function of.
type observed struct {
	canary *v1alpha1.Canary // a deep copy
	// stable is the stable Deployment, nil when it does not exist.
	stable *appsv1.Deployment
	// canaryDep is the Deployment named spec.canary.name, nil when it does not exist; it may be
	// owned by another object (the plan refuses to touch it then).
	canaryDep *appsv1.Deployment
}

// observe reads the Deployments of cn from the lister, each overlaid with a pending write of
// this controller.
func (c *Controller) observe(cn *v1alpha1.Canary) (*observed, error) {
	obs := &observed{canary: cn}
	var err error
	if obs.stable, err = c.deployment(cn.Namespace, cn.Spec.StableRef.Name); err != nil {
		return nil, err
	}
	if obs.canaryDep, err = c.deployment(cn.Namespace, cn.Spec.Canary.Name); err != nil {
		return nil, err
	}
	return obs, nil
}

// deployment returns a Deployment from the lister (nil when it does not exist), or the
// controller's own last write of it while the lister does not show that write.
func (c *Controller) deployment(namespace, name string) (*appsv1.Deployment, error) {
	d, err := c.deploymentLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		d, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if w := c.pending.lookup(namespace+"/"+name, d); w != nil {
		return w, nil
	}
	return d, nil
}

// pendingTTL bounds how long a Deployment write may stay unseen before the controller stops
// waiting for it (a lost watch event must not hide the Deployment's real state for ever).
const pendingTTL = 2 * time.Minute

// pendingWrites are the Canary controller's expectations: the Deployment writes it made that its
// cache does not show yet, each with the object the API server returned. Until the cache shows a
// write, the plan works from that object, so that a sync in that window neither repeats the write
// (a second create fails, a scale repeated is harmless but a decision on the old replicas is not:
// it would count capacity twice) nor undoes it.
type pendingWrites struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	m     map[string]pendingWrite
}

type pendingWrite struct {
	// uid and baseVersion identify the cached Deployment the write was based on; both are empty
	// for a create.
	uid         types.UID
	baseVersion string
	written     *appsv1.Deployment
	expires     time.Time
}

func newPendingWrites(c clock.PassiveClock) *pendingWrites {
	return &pendingWrites{clock: c, m: map[string]pendingWrite{}}
}

// expect records a write of the Deployment key: base is the cached Deployment it was based on
// (nil for a create) and written what the API server returned. A second write of the same
// Deployment keeps the first write's base while the cache shows neither.
func (p *pendingWrites) expect(key string, base, written *appsv1.Deployment) {
	w := pendingWrite{written: written.DeepCopy(), expires: p.clock.Now().Add(pendingTTL)}
	if base != nil {
		w.uid, w.baseVersion = base.UID, base.ResourceVersion
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A write based on an earlier write the cache does not show yet waits for the same cached
	// version as that one.
	if prev, ok := p.m[key]; ok && base != nil && base.UID == prev.written.UID && base.ResourceVersion == prev.written.ResourceVersion {
		w.uid, w.baseVersion = prev.uid, prev.baseVersion
	}
	p.m[key] = w
}

// forget drops the record of a Deployment (its write failed).
func (p *pendingWrites) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, key)
}

// lookup returns the written Deployment while the cached one (nil when the cache has none) is
// still the one the write was based on and does not show what was written; otherwise it drops
// the record and returns nil.
func (p *pendingWrites) lookup(key string, cached *appsv1.Deployment) *appsv1.Deployment {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.m[key]
	if !ok {
		return nil
	}
	pending := p.clock.Now().Before(w.expires)
	if w.uid == "" { // a create: pending until the cache has the Deployment
		pending = pending && cached == nil
	} else {
		pending = pending && cached != nil && cached.UID == w.uid && cached.ResourceVersion == w.baseVersion &&
			!equality.Semantic.DeepEqual(cached.Spec, w.written.Spec)
	}
	if !pending {
		delete(p.m, key)
		return nil
	}
	return w.written.DeepCopy()
}
