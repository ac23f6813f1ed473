package canary

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// scale brings the Deployments towards target canary pods without letting available capacity
// drop below spec.replicas, nor the pods of both Deployments rise above spec.replicas +
// maxSurge (podsOf: a pod counts from its Deployment's spec until it is gone):
//   - the canary Deployment is created, or its template updated, and scaled up towards target
//     as far as the surge budget allows: a step larger than the budget is reached in sub-steps,
//     as stable pods go;
//   - the stable Deployment is set to replicas − (available canary pods, at most target): it
//     shrinks only as canary pods become available and grows back if they stop being available;
//   - the canary Deployment is scaled down to target only once the stable Deployment has
//     replicas − target pods available on its current template.
//
// With hold (spec.paused) the canary Deployment is left as it is and the stable Deployment may
// only grow.
func (r *reconciler) scale(target int32, hold bool) {
	replicas := r.canary.Spec.Replicas

	// The canary's availability is trusted only while its status describes its spec, template
	// and minReadySeconds; until then the stable Deployment may grow but not shrink. A scale-up
	// does not make the available pods any less available.
	observed := r.canaryDep
	trusted := observed == nil || statusObserved(observed)
	if observed == nil {
		if !hold {
			r.createCanary(min(target, r.surgeRoom()))
		}
	} else if !hold && r.updateCanaryTemplate() {
		trusted = false
	}
	canaryReplicas := replicasOf(r.canaryDep)
	if r.canaryDep != nil && !r.canaryNew && !hold && trusted && !rolling(r.canaryDep) && canaryReplicas < target {
		if n := min(target, canaryReplicas+r.surgeRoom()); n > canaryReplicas {
			r.scaleCanary(n)
		}
	}

	stableTarget := max(0, replicas-min(r.canaryAvailable(), target))
	if (hold || !trusted) && stableTarget < replicasOf(r.stable) {
		stableTarget = replicasOf(r.stable)
	}
	if stableTarget > replicasOf(r.stable) { // growing back: within the budget too
		stableTarget = min(stableTarget, replicasOf(r.stable)+r.surgeRoom())
	}
	if stableTarget != replicasOf(r.stable) {
		r.scaleStable(stableTarget)
	}

	if r.canaryDep != nil && !hold && canaryReplicas > target && r.stableReady(replicas-target) {
		r.scaleCanary(target)
	}
}

// surgeLimit is the most pods the stable and canary Deployments may run together.
func (r *reconciler) surgeLimit() int32 {
	surge, err := v1alpha1.CanaryMaxSurge(&r.canary.Spec)
	if err != nil {
		surge = 1 // the schema refuses such a maxSurge; never stall a rollback on it
	}
	return r.canary.Spec.Replicas + surge
}

// surgeRoom is how many pods may be added now: the surge limit less the pods both Deployments
// may still run, as decided so far in this sync.
func (r *reconciler) surgeRoom() int32 {
	return max(0, r.surgeLimit()-podsOf(r.stable)-podsOf(r.canaryDep))
}

// rolling reports whether a Deployment is replacing pods of an older template, or has pods
// beyond its spec: it may still add pods of its own, so it is not scaled up meanwhile.
func rolling(d *appsv1.Deployment) bool {
	return !statusObserved(d) || d.Status.UpdatedReplicas < d.Status.Replicas || d.Status.Replicas > replicasOf(d)
}

// podsOf is how many pods a Deployment may still run: its spec, or more while pods it scaled
// away have not gone yet (its status, terminating pods included).
func podsOf(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return max(replicasOf(d), d.Status.Replicas+ptr.Deref(d.Status.TerminatingReplicas, 0))
}

// stableGone reports whether the stable Deployment runs no pod, as the Deployment controller
// last reported it for its current spec.
func stableGone(d *appsv1.Deployment) bool {
	return replicasOf(d) == 0 && statusObserved(d) && podsOf(d) == 0
}

// stableReady reports whether the stable Deployment, as last observed, has at least want pods
// available and no rollout of its own template under way, so that canary pods may go.
func (r *reconciler) stableReady(want int32) bool {
	s := r.stable
	return !r.stableRest &&
		statusObserved(s) &&
		replicasOf(s) >= want &&
		s.Status.AvailableReplicas >= want &&
		s.Status.UpdatedReplicas == s.Status.Replicas
}
