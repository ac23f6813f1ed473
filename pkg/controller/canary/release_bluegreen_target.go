package canary

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Blue-green with a Deployment target (spec.blueGreen with targetRef of kind Deployment;
// docs/canary-targets.md, "Blue-green with a Deployment target"): the Deployment target's
// release (release_deployment.go: hold, temporary canary Deployment, hand-over, abort) with the
// blue-green planner (release_bluegreen.go) over the same pair of Deployments. The target's pods
// carry label v1alpha1.LabelBlueGreen by the user's own template (required, never written by
// the agent: the Deployment is in Git); the temporary Deployment's by the template the agent
// makes. The hand-over grows the target to spec.replicas at once; the Services move to its
// pods once every one is available (blueGreenPlan.route), and only then does the temporary
// Deployment go.
//
// With spec.trafficRouting (docs/canary-targets.md, "Blue-green with a Deployment target through
// an HTTPRoute") the Services select each side by the user's labels, the temporary pods taking
// the canary Service's (trafficLabels): no blue-green label and no Service write. The switch is
// the route's weights (blueGreenTargetWeight); the hand-over starts once the target's old pods
// are all gone, and the route moves back in one patch once its new pods are all available.

// blueGreenTargetRelease is the release mode of a blue-green Deployment target.
type blueGreenTargetRelease struct{ deploymentRelease }

// observe reads the target, the temporary Deployment and the two Services.
func (blueGreenTargetRelease) observe(ctx context.Context, c *Controller, obs *observed) error {
	if err := (deploymentRelease{}).observe(ctx, c, obs); err != nil {
		return err
	}
	return observeBlueGreenServices(ctx, c, obs)
}

func (blueGreenTargetRelease) plan(d *decision) releasePlan {
	dp := newDeploymentPlan(d)
	r := &blueGreenTargetPlan{deploymentPlan: dp, bg: &blueGreenPlan{pairPlan: dp.pairPlan, userLabels: true}}
	dp.pairRollback, dp.handOver = r.bg.rollback, r.handOverWhole
	return r
}

// blueGreenTargetPlan is the Deployment target's planner, whose steps, moves, routing, status
// and writes are the blue-green planner's (sharing its pairPlan).
type blueGreenTargetPlan struct {
	*deploymentPlan
	bg *blueGreenPlan
}

// begin refuses a target whose pods would not carry the blue-green label, names too long for
// it and missing Services, then is the Deployment target's, with the temporary Deployment's
// pods labelled as theirs. Switched by the route, the Services select each side by the user's
// labels (the temporary pods take the canary Service's, trafficLabels): no blue-green label
// is needed or added.
func (r *blueGreenTargetPlan) begin() course {
	cn := r.canary
	d := r.obs.stable
	if d != nil && !r.byRoute() && (!r.userLabelled(d) || !r.bg.sideNamesFit(d.Name, temporaryCanaryName(cn.Name))) {
		return decided
	}
	if d != nil && !r.bg.servicesExist() {
		return decided
	}
	c := r.deploymentPlan.begin()
	if r.names.template != nil && !r.byRoute() {
		r.names.template = withSideLabel(r.names.template, r.names.canary)
	}
	return c
}

// userLabelled reports whether the target's template, and the stable template recorded (the
// pods it runs now), carry the blue-green label naming the target; otherwise the Canary is
// Degraded: the agent does not write the template of a Deployment in Git.
func (r *blueGreenTargetPlan) userLabelled(d *appsv1.Deployment) bool {
	templates := []*corev1.PodTemplateSpec{&d.Spec.Template}
	if snap, err := recordedSnapshot(r.canary); err == nil && snap != nil && snap.Deployment == d.Name {
		templates = append(templates, &snap.Template)
	}
	for i, t := range templates {
		if t.Labels[v1alpha1.LabelBlueGreen] == d.Name {
			continue
		}
		which := fmt.Sprintf("the pod template of Deployment %q", d.Name)
		if i == 1 {
			which = fmt.Sprintf("the stable template recorded for Deployment %q (its running pods)", d.Name)
		}
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"%s lacks label %s: %s: a blue-green release selects the Deployment's pods by it; put it in the template in Git (docs/canary-targets.md, \"Blue-green with a Deployment target\")",
			which, v1alpha1.LabelBlueGreen, d.Name))
		return false
	}
	return true
}

func (r *blueGreenTargetPlan) move(target int32, hold bool) { r.bg.move(target, hold) }

func (r *blueGreenTargetPlan) route() { r.bg.route() }

// handOverWhole grows the target to spec.replicas at once on its new template; route switches
// the Services to its pods once they are all available, and holds the temporary Deployment's
// scale-down until then; then the temporary Deployment is deleted.
func (r *blueGreenTargetPlan) handOverWhole() {
	replicas := r.canary.Spec.Replicas
	if !r.pauseForHandOver() {
		return
	}
	if replicasOf(r.stable) < replicas {
		r.scaleStable(replicas)
	}
	if r.canaryDep != nil && replicasOf(r.canaryDep) > 0 && r.stableReady(replicas) {
		r.scaleCanary(0)
	}
	r.finishHandOver()
}

// fillStatus is the Deployment target's, with status.blueGreen; switched by the route, the
// preview (the canary Service's pods) is the temporary Deployment only while it exists: between
// releases the canary Service selects no pod.
func (r *blueGreenTargetPlan) fillStatus(st *v1alpha1.CanaryStatus) {
	r.deploymentPlan.fillStatus(st)
	r.bg.fillBlueGreenStatus(st)
	if r.byRoute() && (r.canaryDep == nil || r.deletesTemporary()) {
		st.BlueGreen.Preview = ""
	}
}

// deletesTemporary reports whether this sync deletes the temporary Deployment.
func (r *deploymentPlan) deletesTemporary() bool {
	return slices.ContainsFunc(r.depWrites, func(w depTargetWrite) bool { return w.kind == deleteTemporary })
}

// execute writes the Services' selectors, then the Deployment target's writes.
func (r *blueGreenTargetPlan) execute(ctx context.Context, c *Controller) (*failure, error) {
	if f, err := r.bg.writeServices(ctx, c); f != nil || err != nil {
		return f, err
	}
	return r.deploymentPlan.execute(ctx, c)
}

// blueGreenTargetWeight is the canary weight of a Deployment target's blue-green release
// switched by the route: none while there is no temporary Deployment (the target serves
// everything); all of it from the switch until the hand-over; otherwise (before the switch, on
// a switch-back, during the hand-over) none once every one of the target's spec.replicas pods
// is available, and what the route gives the temporary pods until then. Before the switch the
// target's pods are all up but after a template change that restarts a switched release, its
// pods may have been scaled down: the route waits for them (holdPreviewUntilPinned holds the
// preview's writes meanwhile).
func (r *pairPlan) blueGreenTargetWeight() int32 {
	switch {
	case r.canaryDep == nil:
		return 0
	case r.switched() && !r.handingBack:
		return 100
	case !r.targetWhole():
		return r.traffic.current.CanaryWeight
	}
	return 0
}

// targetWhole reports whether the target has every one of spec.replicas pods available on the
// stable template: as planned, or, on a switch-back whose first write restores the paused
// target's template, as observed. The pods of a paused Deployment all run the ReplicaSet it
// had when paused (pausedView): writing that template back changes none of them, so the route
// switches back in the same sync, written before the template.
func (r *pairPlan) targetWhole() bool {
	replicas := r.canary.Spec.Replicas
	if r.stableReady(replicas) {
		return true
	}
	o := r.obs.stable
	return r.rollsBack() && o != nil && o.Spec.Paused && deploymentReady(pausedView(o), replicas)
}
