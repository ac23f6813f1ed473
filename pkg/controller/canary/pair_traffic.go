package canary

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
)

// Argo Rollouts marks a Service a Rollout routes through with argoManagedByRollouts (the
// Rollout's name) and adds argoPodTemplateHash to its selector, so that it selects that
// Rollout's ReplicaSets only (github.com/argoproj/argo-rollouts, rollout/service.go).
const (
	argoManagedByRollouts = "argo-rollouts.argoproj.io/managed-by-rollouts"
	argoPodTemplateHash   = "rollouts-pod-template-hash"
)

// trafficObserved is what a sync read of spec.trafficRouting; nil fields do not exist.
type trafficObserved struct {
	unavailable          bool // the cluster has no Gateway API
	route                *gatewayv1.HTTPRoute
	stableSvc, canarySvc *corev1.Service
}

// trafficPlan is the traffic part of a sync's plan.
type trafficPlan struct {
	obs     *trafficObserved
	reason  string // of TrafficRoutingReady=False; "" when ready
	message string
	current traffic.Observed // what the route carries
	weight  int32            // the canary weight wanted
	matches []v1alpha1.CanaryHeaderMatch
	patch   []byte               // nil: nothing to write
	written *gatewayv1.HTTPRoute // the route as patched, once written
}

// route decides the route's weights and header rule, then holds back the Deployment
// writes that traffic must precede: nothing moves while routing is not ready; no canary pod goes
// while the route (as observed) sends the canary traffic; no stable pod goes below what the
// stable weight needs. The route is written before any Deployment write of the sync (execute),
// so an abort takes the canary's traffic away before it scales anything.
func (r *pairPlan) route() {
	if r.obs.traffic == nil || r.names.template == nil { // nil: a Deployment target refused before its release began
		return
	}
	t := &trafficPlan{obs: r.obs.traffic}
	r.traffic = t
	if t.reason, t.message = r.checkTraffic(); t.reason != "" {
		r.holdWrites(func(deploymentWrite) bool { return true })
		r.requeueAt(r.now.Add(serviceTTL)) // Services are not watched: look again for a fixed one
		return
	}
	t.weight, t.matches = r.desiredTraffic()
	var err error
	if t.patch, err = traffic.Plan(t.obs.route, r.services(), traffic.Desired{CanaryWeight: t.weight, Matches: t.matches}); err != nil {
		t.reason, t.message = v1alpha1.ReasonHTTPRouteInvalid, err.Error()
		r.holdWrites(func(deploymentWrite) bool { return true })
		return
	}
	r.awaitEndpoints() // endpoints.go: a blue-green move waits for the destination's endpoints
	if r.handingBack {
		r.boundCanary(t.current.CanaryWeight) // deployment_traffic.go
		return
	}
	if t.current.CanaryWeight > 0 || t.current.HeaderRule >= 0 {
		r.holdWrites(func(w deploymentWrite) bool { return w.kind == scaleCanary && w.to < w.from })
	}
	r.boundStable(t.current.CanaryWeight)
}

func (r *decision) services() traffic.Services {
	g := r.canary.Spec.TrafficRouting.GatewayAPI
	return traffic.Services{Stable: g.StableService, Canary: g.CanaryService}
}

// checkTraffic returns why the route or the Services cannot be used ("" when they can). The
// Services must select the right pods: the agent reports a wrong selector, never fixes it.
func (r *pairPlan) checkTraffic() (reason, message string) {
	t, g := r.traffic, r.canary.Spec.TrafficRouting.GatewayAPI
	switch {
	case t.obs.unavailable:
		return v1alpha1.ReasonGatewayAPIUnavailable, "the cluster serves no gateway.networking.k8s.io/v1 HTTPRoute: install the Gateway API CRDs and restart the agent"
	case t.obs.route == nil:
		return v1alpha1.ReasonHTTPRouteNotFound, fmt.Sprintf("HTTPRoute %q not found: nothing is changed until it exists", g.HTTPRoute)
	case t.obs.stableSvc == nil:
		return v1alpha1.ReasonServiceNotFound, fmt.Sprintf("stable Service %q not found: nothing is changed until it exists", g.StableService)
	case t.obs.canarySvc == nil:
		return v1alpha1.ReasonServiceNotFound, fmt.Sprintf("canary Service %q not found: nothing is changed until it exists", g.CanaryService)
	}
	for _, svc := range []*corev1.Service{t.obs.stableSvc, t.obs.canarySvc} {
		if rollout, ok := svc.Annotations[argoManagedByRollouts]; ok {
			return v1alpha1.ReasonServiceManagedElsewhere, fmt.Sprintf(
				"Service %q is managed by Argo Rollouts (Rollout %q, annotation %s): it sets the Service's selector to its own pods (%s); give the Canary Services of its own",
				svc.Name, rollout, argoManagedByRollouts, argoPodTemplateHash)
		}
	}
	canaryLabels := r.names.template.Labels
	switch {
	case r.stable != nil && !selects(t.obs.stableSvc, r.stable.Spec.Template.Labels):
		return v1alpha1.ReasonServiceSelector, fmt.Sprintf("stable Service %q does not select the pods of stable Deployment %q", g.StableService, r.stable.Name)
	case selects(t.obs.stableSvc, canaryLabels) && r.canary.Spec.TargetRef != nil:
		return v1alpha1.ReasonServiceSelector, fmt.Sprintf(
			"stable Service %q also selects the canary Deployment's pods: select a label of Deployment %q's pods that canary Service %q selects with another value (track: stable beside track: canary)",
			g.StableService, r.stable.Name, g.CanaryService)
	case selects(t.obs.stableSvc, canaryLabels):
		return v1alpha1.ReasonServiceSelector, fmt.Sprintf("stable Service %q also selects the canary's pods: its weight would reach them (add a label that tells them apart)", g.StableService)
	case !selects(t.obs.canarySvc, canaryLabels):
		return v1alpha1.ReasonServiceSelector, fmt.Sprintf("canary Service %q does not select the pods of spec.canary.template", g.CanaryService)
	}
	var err error
	if t.current, err = traffic.Observe(t.obs.route, r.services()); err != nil {
		return v1alpha1.ReasonHTTPRouteInvalid, err.Error()
	}
	return "", ""
}

// rollsBack reports whether this sync rolls the release back.
func (r *decision) rollsBack() bool {
	return r.canary.Spec.Rollback || r.phase == v1alpha1.CanaryRollingBack || r.phase == v1alpha1.CanaryRolledBack
}

// desiredTraffic is the canary weight and header matches of the release's state: none while it
// rolls back (once a stable pod is available) or before any canary pod is available; everything once it completed; otherwise the
// step's weight, by default the canary's share of available pods, and the step's header
// matches. While a step's pods come up, its header matches and an explicit weight wait for
// them: the previous step's routing holds meanwhile.
func (r *pairPlan) desiredTraffic() (int32, []v1alpha1.CanaryHeaderMatch) {
	cn, st := r.canary, &r.status
	avail := r.canaryAvailable()
	switch {
	case cn.Spec.BlueGreen != nil:
		return r.blueGreenWeight(), nil // release_bluegreen.go
	case r.rollsBack() && r.obs.stable != nil && r.obs.stable.Status.AvailableReplicas == 0:
		// Aborted after completion: no stable pod serves yet. Routing to it would be an outage;
		// the canary keeps its weight until the first stable pod is available.
		return r.traffic.current.CanaryWeight, nil
	case r.rollsBack() || st.CurrentBatch == 0 || avail == 0:
		return 0, nil
	case r.handingBack:
		return r.handBackWeight(), nil // deployment_traffic.go
	case r.phase == v1alpha1.CanaryCompleted:
		return 100, nil
	}
	k := int(st.CurrentBatch)
	upgrading := k <= len(st.Batches) && st.Batches[k-1].State == v1alpha1.BatchUpgrading
	weight := int32(100)
	if cn.Spec.Replicas > 0 {
		weight = min(100, 100*avail/cn.Spec.Replicas)
	}
	weightStep, matchStep := specStep(cn, k), specStep(cn, k)
	if upgrading {
		matchStep = specStep(cn, k-1)
		if weightStep != nil && weightStep.Weight != nil {
			weightStep = matchStep
		}
	}
	if weightStep != nil && weightStep.Weight != nil {
		weight = *weightStep.Weight
	}
	if matchStep == nil {
		return weight, nil
	}
	return weight, matchStep.Matches
}

// specStep is spec.steps[k-1], nil for none (shorthands, the final step CanarySteps adds).
func specStep(cn *v1alpha1.Canary, k int) *v1alpha1.CanaryStep {
	if k < 1 || k > len(cn.Spec.Steps) {
		return nil
	}
	return &cn.Spec.Steps[k-1]
}

// holdWrites drops the decided Deployment writes that hold reports, and makes the Deployments
// as they will be after the writes match what is left.
func (r *pairPlan) holdWrites(hold func(deploymentWrite) bool) {
	kept := r.writes[:0]
	for _, w := range r.writes {
		if !hold(w) {
			kept = append(kept, w)
		}
	}
	r.writes = kept
	r.stable, r.stableRest = r.obs.stable, false
	if r.canaryNew {
		r.canaryDep, r.canaryNew = nil, false
	} else if r.canaryDep != nil {
		r.canaryDep = r.obs.canaryDep
	}
	for _, w := range r.writes {
		switch w.kind {
		case scaleStable, restoreStable:
			r.stable, r.stableRest = w.object.DeepCopy(), true
		case createCanary:
			r.canaryDep, r.canaryNew = w.object.DeepCopy(), true
		default:
			r.canaryDep = w.object.DeepCopy()
		}
	}
}

// boundStable keeps the stable Deployment at what its weight (100 − the route's canary weight)
// needs: ceil(replicas × weight / 100), or all of spec.replicas for a blue-green release. With spec.dynamicStableScale it shrinks to exactly that
// as the weight falls; otherwise it only never goes below it. A blue-green release ignores
// dynamicStableScale (the schema refuses the pair, but objects stored before may have it): its
// old side must stay whole until the scale-down delay so that an abort switches back at once.
func (r *pairPlan) boundStable(canaryWeight int32) {
	if r.stable == nil || r.rollsBack() {
		return
	}
	replicas := r.canary.Spec.Replicas
	floor := (replicas*(100-canaryWeight) + 99) / 100
	if r.canary.Spec.BlueGreen != nil && canaryWeight < 100 {
		floor = replicas // the old side stays whole while the route sends it anything
	}
	planned := replicasOf(r.stable)
	target := max(planned, floor)
	if r.canary.Spec.DynamicStableScale && r.canary.Spec.BlueGreen == nil && r.status.CurrentBatch > 0 {
		target = floor
	}
	if target == planned {
		return
	}
	r.holdWrites(func(w deploymentWrite) bool { return w.kind == scaleStable })
	if target != replicasOf(r.stable) && (target < replicasOf(r.stable) || !r.stableRest) {
		r.scaleStable(target)
	}
}

// setTrafficStatus records in st what the route carries and the TrafficRoutingReady condition.
func setTrafficStatus(r *decision, st *v1alpha1.CanaryStatus) {
	t := r.traffic
	if t == nil {
		st.TrafficRouting = nil
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionTrafficRoutingReady)
		return
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionTrafficRoutingReady, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonTrafficReady, Message: "the HTTPRoute and both Services are as the release needs them",
		ObservedGeneration: r.canary.Generation, LastTransitionTime: r.now}
	if t.reason != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, t.reason, t.message
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if t.reason != "" {
		return
	}
	route, current := t.obs.route, t.current
	if t.written != nil {
		route = t.written
		current, _ = traffic.Observe(route, r.services())
	}
	ts := &v1alpha1.CanaryTrafficStatus{
		DesiredWeight: t.weight, ActualWeight: current.CanaryWeight,
		HeaderRoute: current.HeaderRule >= 0, HeaderMatches: current.Matches,
		HTTPRouteGeneration: route.Generation, HTTPRouteResourceVersion: route.ResourceVersion,
	}
	st.TrafficRouting = ts
}
