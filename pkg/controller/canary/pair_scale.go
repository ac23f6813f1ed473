package canary

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// scale brings the Deployments towards target canary pods without letting available capacity
// drop below spec.replicas, nor the pods of both Deployments rise above spec.replicas +
// maxSurge (mayRun: a pod counts from its Deployment's spec until it is gone):
//   - the stable Deployment is set to replicas − (canary capacity, at most target): it shrinks
//     only as canary pods become available and grows back if they stop being available; growing
//     back has the first claim on the surge budget, since it restores capacity;
//   - the canary Deployment is created, or its template updated, and scaled up towards target
//     into what is left of the budget: a step larger than the budget is reached in sub-steps,
//     as stable pods go;
//   - the canary Deployment is scaled down towards target only as far as the stable
//     Deployment has pods available on its current template to replace it.
//
// With hold (spec.paused) the canary Deployment is left as it is and the stable Deployment may
// only grow.
func (r *pairPlan) scale(target int32, hold bool) {
	replicas := r.canary.Spec.Replicas
	stable := replicasOf(r.stable)
	want := max(0, replicas-min(r.canaryCapacity(), target))
	if r.completed() {
		// Every step is done: the stable template is retired, and a total raised now (an
		// autoscaler) is the canary's alone to cover, as a Deployment's own scale-up would be
		// (docs/canary.md, "Autoscaling").
		want = min(want, stable)
	}
	grow := min(max(0, want-stable), r.surgeRoom())

	trusted := r.growCanary(target, hold, r.surgeRoom()-grow)

	stableTarget := stable + grow
	if want < stable && !hold && trusted && (!r.obs.wholeSteps || r.canaryWhole(target)) {
		stableTarget = want
	}
	if stableTarget != stable {
		r.scaleStable(stableTarget)
	}

	// A smaller step gives canary pods up as the available stable pods cover them: when the
	// budget keeps the stable Deployment from growing to replicas − target at once, the canary
	// makes room step by step, as in a rollback.
	if r.canaryDep != nil && !hold && replicasOf(r.canaryDep) > target && r.stableReady(0) {
		keep := max(target, replicas-min(r.stable.Status.AvailableReplicas, stable))
		if keep < replicasOf(r.canaryDep) {
			r.scaleCanary(keep)
		}
	}
}

// growCanary creates the canary Deployment, updates its template, or scales it up towards
// target, adding at most room pods. It reports whether the canary's availability may be
// trusted to shrink the stable Deployment: only while its status describes its spec, template
// and minReadySeconds (a scale-up does not make the available pods any less available).
func (r *pairPlan) growCanary(target int32, hold bool, room int32) bool {
	d := r.canaryDep
	if d == nil {
		if !hold {
			r.createCanary(min(target, room))
		}
		return true
	}
	if hold {
		return statusObserved(d)
	}
	if r.updateCanaryTemplate(room) {
		return false
	}
	n := replicasOf(d)
	if statusObserved(d) && !rolling(d) && n < target && room > 0 {
		r.scaleCanary(min(target, n+room))
	}
	return statusObserved(d)
}

// canaryWhole reports whether every canary pod asked for (up to target) is available. With
// Config.StableFollowsWholeSteps the stable Deployment gives its pods up only then: one write
// per canary scale-up instead of one per change of the canary's available count (69 patches in
// a 1000-pod release; bench/RESULTS.md, "Against Argo Rollouts"). Capacity only gains meanwhile
// (the stable pods stay until their replacements are all available); the surge bound holds, as
// the canary grows into room the stable Deployment frees either way.
func (r *pairPlan) canaryWhole(target int32) bool {
	d := r.obs.canaryDep // as observed: a scale-up in this sync asks for pods not made yet
	return d != nil && r.canaryCapacity() >= min(target, replicasOf(d))
}

// canaryCapacity is how many available canary pods the stable Deployment may give pods up for.
// While the canary Deployment rolls a new template out, it may remove available pods down to
// spec − maxUnavailable (updateCanaryTemplate allows the unavailable ones), so no more count.
func (r *pairPlan) canaryCapacity() int32 {
	n, d := r.canaryAvailable(), r.canaryDep
	if d != nil && (rollingOut(d) || r.wrote(updateCanary)) {
		u, _ := intstr.GetScaledValueFromIntOrPercent(rollingBound(d, false), int(replicasOf(d)), false)
		n = min(n, max(0, replicasOf(d)-int32(u)))
	}
	return n
}

// surgeLimit is the most pods the stable and canary Deployments may run together.
func (r *pairPlan) surgeLimit() int32 {
	surge, err := v1alpha1.CanaryMaxSurge(&r.canary.Spec)
	if err != nil {
		surge = 1 // the schema refuses such a maxSurge; never stall a rollback on it
	}
	return r.canary.Spec.Replicas + surge
}

// surgeRoom is how many pods may be added now: the surge limit less the pods both Deployments
// may still run, as decided so far in this sync.
func (r *pairPlan) surgeRoom() int32 {
	return max(0, r.surgeLimit()-r.mayRun(r.stable, restoreStable)-r.mayRun(r.canaryDep, updateCanary))
}

// mayRun is how many pods a Deployment may run before it next reports: podsOf, and while it
// rolls a template out (or this sync writes one, a write of kind rollout), its strategy's
// maxSurge more, which its own rolling update may add.
func (r *pairPlan) mayRun(d *appsv1.Deployment, rollout writeKind) int32 {
	if d == nil {
		return 0
	}
	n := podsOf(d)
	if rollingOut(d) || r.wrote(rollout) {
		s, _ := intstr.GetScaledValueFromIntOrPercent(rollingBound(d, true), int(replicasOf(d)), true)
		n += int32(s)
	}
	return n
}

// rollingBound is a Deployment's maxSurge (surge) or maxUnavailable, as the API server defaults
// them (25%); 0 for the Recreate strategy, which neither adds pods nor keeps any.
func rollingBound(d *appsv1.Deployment, surge bool) *intstr.IntOrString {
	v := intstr.FromString("25%")
	s := d.Spec.Strategy
	switch {
	case s.Type == appsv1.RecreateDeploymentStrategyType:
		v = intstr.FromInt32(0)
	case s.RollingUpdate == nil:
	case surge:
		v = ptr.Deref(s.RollingUpdate.MaxSurge, v)
	default:
		v = ptr.Deref(s.RollingUpdate.MaxUnavailable, v)
	}
	return &v
}

// wrote reports whether this sync decided a write of kind k.
func (r *pairPlan) wrote(k writeKind) bool {
	for _, w := range r.writes {
		if w.kind == k {
			return true
		}
	}
	return false
}

// rolling reports whether a Deployment is replacing pods of an older template, or has pods
// beyond its spec: it may still add pods of its own, so it is not scaled up meanwhile.
func rolling(d *appsv1.Deployment) bool {
	return rollingOut(d) || d.Status.Replicas > replicasOf(d)
}

// rollingOut reports whether a Deployment may be rolling a template out: its status does not
// describe its spec yet, or it still runs pods of an older template.
func rollingOut(d *appsv1.Deployment) bool {
	return !statusObserved(d) || d.Status.UpdatedReplicas < d.Status.Replicas
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
func (r *pairPlan) stableReady(want int32) bool {
	return !r.stableRest && deploymentReady(r.stable, want)
}

// deploymentReady reports whether d, as last observed, has at least want pods available and no
// rollout of its own template under way.
func deploymentReady(d *appsv1.Deployment, want int32) bool {
	return statusObserved(d) &&
		replicasOf(d) >= want &&
		d.Status.AvailableReplicas >= want &&
		d.Status.UpdatedReplicas == d.Status.Replicas
}
