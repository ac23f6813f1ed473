package canary

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// observed is what one sync reads from the listers, overlaid with the controller's own writes
// that the cache does not show yet: everything the plan is a function of.
type observed struct {
	canary *v1alpha1.Canary // a deep copy
	// stable is the stable Deployment, nil when it does not exist.
	stable *appsv1.Deployment
	// target is spec.targetRef's workload, nil when there is none; targetHolder the name of
	// another Canary that holds it ("" when none does); targetKindMissing says the agent has no
	// source for spec.targetRef's kind.
	target            targetWorkload
	targetHolder      string
	targetKindMissing bool
	// canaryDep is the Deployment named spec.canary.name, nil when it does not exist; it may be
	// owned by another object (the plan refuses to touch it then).
	canaryDep *appsv1.Deployment
	traffic   *trafficObserved // spec.trafficRouting's route and Services (pair_traffic.go)
	// activeSvc and previewSvc are spec.blueGreen's Services, nil when they do not exist
	// (release_bluegreen.go).
	activeSvc, previewSvc *corev1.Service
	// endpoints reads a Service's EndpointSlices when a blue-green route move is planned
	// (endpoints.go).
	endpoints endpointReader
	// blueGreenClaim is the older blue-green Canary that shares a Service or the stable
	// Deployment with this one (bluegreen_claims.go).
	blueGreenClaim blueGreenClaim
	// followsTarget: spec.replicas is left out, so the total is the target's own replicas
	// (a Deployment target: those recorded when its release started) (autoscale.go).
	followsTarget bool
	// autoscaler names a HorizontalPodAutoscaler of the Deployment whose replicas the release
	// sets, "" when none does (autoscale.go).
	autoscaler string
	// measured are the checks measured in this sync, by name (analysis.go).
	measured map[string]measured
	// analysis is spec.analysis with its templates resolved (templates.go).
	analysis *analysisView
	// wholeSteps is Config.StableFollowsWholeSteps (pair_scale.go, canaryWhole).
	wholeSteps bool
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
	if w := c.pendingDeployment(namespace+"/"+name, d); w != nil {
		return w, nil
	}
	return d, nil
}

// pendingTTL bounds how long a Deployment write may stay unseen before the controller stops
// waiting for it (a lost watch event must not hide the Deployment's real state for ever).
const pendingTTL = 2 * time.Minute

// pendingWrite is one Deployment write of the controller that its cache does not show yet, with
// the object the API server returned: the controller's expectations. Until the cache shows a
// write, the plan works from that object, so that a sync in that window neither repeats the
// write (a second create fails; a scale decided on the old replicas would count capacity twice)
// nor undoes it. uid and baseVersion identify the cached Deployment the write was based on; both
// are empty for a create.
type pendingWrite struct {
	uid         types.UID
	baseVersion string
	written     *appsv1.Deployment
	expires     time.Time
}

// expectWrite records a write of the Deployment key: base is the cached Deployment it was based
// on (nil for a create) and written what the API server returned. A second write of the same
// Deployment keeps the first write's base while the cache shows neither.
func (c *Controller) expectWrite(key string, base, written *appsv1.Deployment) {
	w := pendingWrite{written: written.DeepCopy(), expires: c.clock.Now().Add(pendingTTL)}
	if base != nil {
		w.uid, w.baseVersion = base.UID, base.ResourceVersion
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.pending[key]; ok && base != nil && base.UID == prev.written.UID && base.ResourceVersion == prev.written.ResourceVersion {
		w.uid, w.baseVersion = prev.uid, prev.baseVersion
	}
	c.pending[key] = w
}

// pendingDeployment returns the written Deployment while the cached one (nil when the cache has
// none) is still the one the write was based on and does not show what was written; otherwise
// it drops the record and returns nil.
func (c *Controller) pendingDeployment(key string, cached *appsv1.Deployment) *appsv1.Deployment {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.pending[key]
	if !ok {
		return nil
	}
	pending := c.clock.Now().Before(w.expires)
	if w.uid == "" { // a create: pending until the cache has the Deployment
		pending = pending && cached == nil
	} else {
		pending = pending && cached != nil && cached.UID == w.uid && cached.ResourceVersion == w.baseVersion &&
			!equality.Semantic.DeepEqual(cached.Spec, w.written.Spec)
	}
	if !pending {
		delete(c.pending, key)
		return nil
	}
	return w.written.DeepCopy()
}
