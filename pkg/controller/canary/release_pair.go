package canary

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The Deployment pair (spec.stableRef + spec.canary): a canary Deployment the Canary owns,
// made from spec.canary.template, is scaled up through the steps while the stable Deployment
// is scaled down as canary pods become available, within the surge bound (pair_scale.go); an
// abort scales the stable Deployment back, restoring its snapshotted template, before the
// canary goes (pair_rollback.go); traffic follows the steps (pair_traffic.go).

// pairRelease is the release mode of the Deployment pair.
type pairRelease struct{}

func (pairRelease) deploymentNames(cn *v1alpha1.Canary) []string {
	return []string{cn.Spec.StableRef.Name, cn.Spec.Canary.Name}
}

func (pairRelease) target(*v1alpha1.Canary) *v1alpha1.CanaryTargetRef { return nil }

// observe reads both Deployments from the lister, each overlaid with a pending write of this
// controller, and what spec.trafficRouting names.
func (pairRelease) observe(ctx context.Context, c *Controller, obs *observed) error {
	cn := obs.canary
	var err error
	if obs.stable, err = c.deployment(cn.Namespace, cn.Spec.StableRef.Name); err != nil {
		return err
	}
	if obs.canaryDep, err = c.deployment(cn.Namespace, cn.Spec.Canary.Name); err != nil {
		return err
	}
	if obs.autoscaler, err = c.autoscalerOf(cn.Namespace, cn.Spec.StableRef.Name); err != nil {
		return err
	}
	obs.traffic, err = c.observeTraffic(ctx, cn)
	return err
}

func (pairRelease) plan(d *decision) releasePlan {
	return newPairPlan(d, specPair(d.canary))
}

// releaseHold has nothing to let go: the pair holds no workload.
func (pairRelease) releaseHold(context.Context, *Controller, *v1alpha1.Canary) error { return nil }

// pairNames are the two Deployments of a pair and the template the canary one is made from.
type pairNames struct {
	stable, canary string
	template       *corev1.PodTemplateSpec
}

// specPair is the pair spec.stableRef and spec.canary name.
func specPair(cn *v1alpha1.Canary) pairNames {
	return pairNames{stable: cn.Spec.StableRef.Name, canary: cn.Spec.Canary.Name, template: &cn.Spec.Canary.Template}
}

// pairPlan is the Deployment pair's side of one sync's plan: the Deployments as they will be
// after the writes decided so far, and those writes.
type pairPlan struct {
	*decision
	names pairNames

	stable    *appsv1.Deployment // as it will be after the writes; nil when it does not exist
	canaryDep *appsv1.Deployment // as it will be after the writes; nil when there is none

	canaryNew  bool // the canary Deployment is created in this sync: its status says nothing yet
	stableRest bool // the stable Deployment is written in this sync: wait to see its status
	// handingBack: no step runs; traffic goes back to the stable Deployment as its pods become
	// available, the canary keeping the pods its weight needs (a Deployment target's hand-over
	// and hold, deployment_traffic.go).
	handingBack bool

	// writes are the Deployment writes decided, in order.
	writes []deploymentWrite
}

func newPairPlan(d *decision, names pairNames) *pairPlan {
	return &pairPlan{decision: d, names: names}
}

// begin refuses a pair it cannot release (a missing stable Deployment, a canary name taken, a
// template its Deployment cannot carry), starts an aborted release again once retried, and
// chooses between rolling back and moving forward.
func (r *pairPlan) begin() course {
	cn := r.canary
	if r.obs.stable == nil {
		if d := r.obs.canaryDep; d != nil && isOwnedBy(d, cn) {
			r.canaryDep = d
		}
		r.setDegraded(v1alpha1.ReasonStableNotFound, fmt.Sprintf(
			"stable Deployment %q not found in namespace %q: nothing is changed until it exists",
			cn.Spec.StableRef.Name, cn.Namespace))
		return decided
	}
	r.stable = r.obs.stable
	if r.refuseAutoscaled(r.stable.Name) { // autoscale.go
		r.canaryDep = r.obs.canaryDep
		return decided
	}

	if d := r.obs.canaryDep; d != nil && !isOwnedBy(d, cn) {
		r.setDegraded(v1alpha1.ReasonCanaryNameConflict, fmt.Sprintf(
			"Deployment %q already exists and is not owned by this Canary: choose another spec.canary.name or delete that Deployment; nothing is changed until then",
			cn.Spec.Canary.Name))
		return decided
	}
	r.canaryDep = r.obs.canaryDep
	if r.degradedSpec() {
		return decided
	}
	r.retry()
	if cn.Spec.Rollback || r.aborted() {
		return rollingBack
	}
	return progressing
}

// beforeFirstStep records the stable Deployment before the canary Deployment is created.
func (r *pairPlan) beforeFirstStep() { r.ensureSnapshot() }

func (r *pairPlan) refuseAfterCompletion() bool { return r.templateChangedAfterCompletion() }

// templateChanged reports whether spec.canary.template changed since the canary Deployment was
// last written.
func (r *pairPlan) templateChanged() bool {
	return r.canaryDep != nil && r.canaryDep.Annotations[v1alpha1.AnnotationTemplateHash] != r.templateHash()
}

func (r *pairPlan) move(target int32, hold bool) { r.scale(target, hold) }

// settle has nothing to finish: the pair's steps are its release.
func (r *pairPlan) settle() {}

// hold is never the pair's course: it holds no workload between releases.
func (r *pairPlan) hold() {}

// stepDone reports whether step k is complete: the canary Deployment runs exactly the step's
// pods, from the current template, all of them available.
func (r *pairPlan) stepDone(k int32) bool {
	d := r.canaryDep
	if d == nil || r.canaryNew {
		return false
	}
	target := r.steps[k-1].canaryReplicas
	return statusObserved(d) &&
		replicasOf(d) == target &&
		d.Annotations[v1alpha1.AnnotationTemplateHash] == r.templateHash() &&
		d.Spec.MinReadySeconds == r.canary.Spec.MinReadySeconds &&
		d.Status.Replicas == target &&
		d.Status.UpdatedReplicas == target &&
		d.Status.AvailableReplicas >= target
}

// canaryReplicas is the canary Deployment's replicas.
func (r *pairPlan) canaryReplicas() int32 { return replicasOf(r.canaryDep) }

// canaryAvailable is the number of available canary pods.
func (r *pairPlan) canaryAvailable() int32 {
	if r.canaryDep == nil || r.canaryNew {
		return 0
	}
	// Pods above its spec are ones a scale-down (a total lowered by an autoscaler) removes but its
	// status, computed before they went, still counts: any of them may be an available one.
	d := r.canaryDep
	return max(0, d.Status.AvailableReplicas-max(0, d.Status.Replicas-replicasOf(d)))
}

// stableReplicas is the stable Deployment's replicas.
func (r *pairPlan) stableReplicas() int32 { return replicasOf(r.stable) }

// stableLeft is the number of stable pods the release still waits to go once its last step is
// complete (0 when none is left).
func (r *pairPlan) stableLeft() int32 {
	if stableGone(r.stable) {
		return 0
	}
	return max(podsOf(r.stable), 1)
}

// fillStatus fills the replica counts of both Deployments.
func (r *pairPlan) fillStatus(st *v1alpha1.CanaryStatus) {
	if r.canaryDep != nil {
		st.CanaryReplicas = replicasOf(r.canaryDep)
		st.CanaryAvailable = r.canaryAvailable()
	}
	st.StableReplicas, st.StableAvailable = 0, 0
	r.stableStatus(st)
}

// stableStatus fills the stable Deployment's replica counts, when there is one.
func (r *pairPlan) stableStatus(st *v1alpha1.CanaryStatus) {
	if r.stable != nil {
		st.StableReplicas = replicasOf(r.stable)
		st.StableAvailable = r.stable.Status.AvailableReplicas
	}
}

// execute makes the Deployment writes in order, stopping at the first the API server refuses.
func (r *pairPlan) execute(ctx context.Context, c *Controller) (*failure, error) {
	for _, w := range r.writes {
		if w.kind == scaleStable {
			if f, err := c.contestDeployment(ctx, r.obs, deploymentReplicas, fmt.Sprint(w.to)); f != nil || err != nil { // contest.go
				return f, err
			}
		}
		err := c.writeDeployment(ctx, r.obs, w)
		if err == nil {
			continue
		}
		if apierrors.IsAlreadyExists(err) { // the cache lags a create of ours: retry once it caught up
			return nil, err
		}
		f := &failure{reason: v1alpha1.ReasonFailedUpdate, message: fmt.Sprintf("%s: %v", w.doing(), err)}
		if w.kind == createCanary {
			f.reason = v1alpha1.ReasonFailedCreate
		}
		c.Recorder.Eventf(r.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
		return f, fmt.Errorf("%s: %w", w.doing(), err)
	}
	return nil, nil
}

// writeKind says what a deploymentWrite does.
type writeKind int

const (
	createCanary writeKind = iota
	updateCanary
	scaleCanary
	scaleStable
	restoreStable
)

// deploymentWrite is one decided Deployment write: the object to create or update, or the patch
// of a scale or restore, and the replicas before and after (for its Event).
type deploymentWrite struct {
	kind     writeKind
	object   *appsv1.Deployment
	patch    []byte
	from, to int32
}

// degradedSpec records, and reports, a spec the canary Deployment cannot be made from.
func (r *pairPlan) degradedSpec() bool {
	cn := r.canary

	if len(cn.Spec.Canary.Template.Labels) == 0 {
		r.setDegraded(v1alpha1.ReasonInvalidSpec,
			"spec.canary.template.metadata.labels is empty: the labels are the canary Deployment's selector")
		return true
	}
	if r.canaryDep != nil && !templateLabelsSelected(r.canaryDep.Spec.Selector, r.names.template) { // the template as the planner writes it
		r.setDegraded(v1alpha1.ReasonSelectorMismatch, fmt.Sprintf(
			"the labels of spec.canary.template no longer match the selector of Deployment %q, which cannot change: restore the labels, or delete that Deployment to have it created again",
			cn.Spec.Canary.Name))
		return true
	}
	return false
}
