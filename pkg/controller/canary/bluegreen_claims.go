package canary

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

// Two blue-green Canaries must not share a Service of spec.blueGreen or the stable Deployment:
// each writes the Services' selectors and scales the Deployments, and the second would take the
// Services over from the first, which still reports them (docs/canary.md, "Blue-green"). As for a
// shared target (holder), the oldest Canary by creationTimestamp, then name, keeps the claim;
// the other is Degraded with reason CanaryNameConflict, naming it and what they share, and
// writes nothing to the Services or the Deployments.

// blueGreenClaim is the other Canary that holds what cn shares with it, and what they share;
// empty when cn holds all it names.
type blueGreenClaim struct{ holder, shared string }

// blueGreenClaimOf finds the oldest other blue-green Canary of cn's namespace that shares a
// Service or the stable Deployment with cn and is older than it.
func (c *Controller) blueGreenClaimOf(cn *v1alpha1.Canary) (blueGreenClaim, error) {
	others, err := c.canaryLister.Canaries(cn.Namespace).List(labels.Everything())
	if err != nil {
		return blueGreenClaim{}, err
	}
	var claim blueGreenClaim
	first := cn
	for _, o := range others {
		if o.UID == cn.UID || o.Name == cn.Name || o.DeletionTimestamp != nil || o.Spec.BlueGreen == nil {
			continue
		}
		shared := sharedByBlueGreen(cn, o)
		older := o.CreationTimestamp.Before(&first.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&first.CreationTimestamp) && o.Name < first.Name)
		if shared != "" && older {
			first, claim = o, blueGreenClaim{holder: o.Name, shared: shared}
		}
	}
	return claim, nil
}

// sharedByBlueGreen names the Services and the stable Deployment two blue-green Canaries both
// name ("" for none).
func sharedByBlueGreen(a, b *v1alpha1.Canary) string {
	var shared []string
	services := []string{b.Spec.BlueGreen.ActiveService, b.Spec.BlueGreen.PreviewService}
	for _, s := range []string{a.Spec.BlueGreen.ActiveService, a.Spec.BlueGreen.PreviewService} {
		if slices.Contains(services, s) {
			shared = append(shared, fmt.Sprintf("Service %q", s))
		}
	}
	if d := blueGreenStable(a); d != "" && d == blueGreenStable(b) {
		shared = append(shared, fmt.Sprintf("Deployment %q", d))
	}
	return strings.Join(shared, ", ")
}

// blueGreenStable is the Deployment whose pods a blue-green Canary starts from: its stableRef,
// or its Deployment target.
func blueGreenStable(cn *v1alpha1.Canary) string {
	switch {
	case cn.Spec.StableRef.Name != "":
		return cn.Spec.StableRef.Name
	case cn.Spec.TargetRef != nil && cn.Spec.TargetRef.Kind == "Deployment":
		return cn.Spec.TargetRef.Name
	}
	return ""
}

// refuseClaimed sets Degraded, and reports true, when another Canary holds what this one shares
// with it.
func (r *blueGreenPlan) refuseClaimed() bool {
	claim := r.obs.blueGreenClaim
	if claim.holder == "" {
		return false
	}
	r.setDegraded(v1alpha1.ReasonCanaryNameConflict, fmt.Sprintf(
		"Canary %q releases %s already: two blue-green Canaries cannot share a Service or the stable Deployment; delete this one or give it its own (nothing is changed until then)",
		claim.holder, claim.shared))
	return true
}

// claimantsHandler enqueues, when a blue-green Canary changes or goes, the others that share a
// Service or the stable Deployment with it: the claim may have passed to one of them.
func (c *Controller) claimantsHandler() cache.ResourceEventHandlerFuncs {
	enqueue := func(obj interface{}) {
		o, err := expectations.ObjectFromDeleteEvent(obj)
		cn, ok := o.(*v1alpha1.Canary)
		if err != nil || !ok || cn.Spec.BlueGreen == nil {
			return
		}
		others, _ := c.canaryLister.Canaries(cn.Namespace).List(labels.Everything())
		for _, other := range others {
			if other.Name != cn.Name && other.Spec.BlueGreen != nil && sharedByBlueGreen(cn, other) != "" {
				c.Enqueue(other)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj interface{}) { enqueue(obj) }, DeleteFunc: enqueue}
}
