package canary

// Traffic routing of a Deployment target (docs/canary-targets.md, "Traffic with a Deployment
// target"). The temporary canary Deployment's pods are told apart from the target's by their
// labels, which the agent sets on the template it makes (trafficLabels), not by a selector it
// writes on the user's Services: the Services stay as the user wrote them, in Git. Between
// releases and during the hand-over traffic goes back to the target as its pods become
// available (handBackWeight), and the canary keeps the pods its weight needs (boundCanary).

// trafficLabels makes the labels of the temporary canary Deployment's pods (a copy of the
// target's) match the canary Service and not the stable one: every label of the canary Service's
// selector is set, and every label the stable Service selects and the canary Service does not
// is removed. With track: stable on the target's pods, a stable Service selecting it and a
// canary Service selecting track: canary, the canary pods carry track: canary. Without traffic
// routing, or while a Service is missing (the route then holds every write), labels are kept.
func trafficLabels(labels map[string]string, tr *trafficObserved) {
	if tr == nil || tr.stableSvc == nil || tr.canarySvc == nil {
		return
	}
	canary := tr.canarySvc.Spec.Selector
	for k := range tr.stableSvc.Spec.Selector {
		if _, ok := canary[k]; !ok {
			delete(labels, k)
		}
	}
	for k, v := range canary {
		labels[k] = v
	}
}

// handBackWeight is the canary's weight while no step runs on a Deployment target: what the
// target's available pods do not carry yet (100 − floor(100 × available / replicas)), 0 once
// there is no canary Deployment.
func (r *pairPlan) handBackWeight() int32 {
	replicas := r.canary.Spec.Replicas
	if r.canaryDep == nil || replicas <= 0 || r.obs.stable == nil {
		return 0
	}
	return 100 - min(100, 100*r.obs.stable.Status.AvailableReplicas/replicas)
}

// boundCanary keeps the canary Deployment at what its weight (the route's, as last observed)
// needs, ceil(replicas × weight / 100): a smaller scale decided by the hand-over waits until the
// route shows the weight that lets those pods go.
func (r *pairPlan) boundCanary(weight int32) {
	need := (r.canary.Spec.Replicas*weight + 99) / 100
	for _, w := range r.writes {
		if w.kind != scaleCanary || w.to >= need {
			continue
		}
		r.holdWrites(func(w deploymentWrite) bool { return w.kind == scaleCanary })
		if need < replicasOf(r.canaryDep) {
			r.scaleCanary(need)
		}
		return
	}
}

// templateChanged is the pair's, but a missing Service is not a template change: the canary
// pods' labels are then unknown, not changed (trafficLabels keeps the target's), and the route
// holds every write until the Service is back; a baking step must not start again for it.
func (r *deploymentPlan) templateChanged() bool {
	if t := r.obs.traffic; t != nil && (t.stableSvc == nil || t.canarySvc == nil) {
		return false
	}
	return r.pairPlan.templateChanged()
}
