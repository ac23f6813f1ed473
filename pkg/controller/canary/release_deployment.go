package canary

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A Canary whose spec.targetRef is a Deployment releases that Deployment (the one in Git)
// through a temporary canary Deployment (docs/canary-targets.md). It is the stableRef + canary
// release with the user's Deployment as the stable one and a Deployment the Canary owns,
// <canary>-canary, made from the user's new template, as the canary one: the steps, surge
// bound, pauses, analysis, deadline and rollback are that release's (steps.go, pair_scale.go,
// pair_rollback.go).
//
//   - Hold: between releases the Deployment is kept spec.paused, so that a change of its
//     template makes no pod (a paused Deployment creates no ReplicaSet for a new template,
//     and scales the one that has its pods). The template the pods run is recorded in the
//     Canary's v1alpha1.AnnotationStableSnapshot before the pause: it is the stable template.
//   - Release: the Deployment's template differs from the snapshot. The temporary canary
//     Deployment carries the new template through the steps while the paused Deployment is
//     scaled down (its pods stay on the stable template), within spec.maxSurge.
//   - Hand-over: once every step is complete and the Deployment has no pod left, the new
//     template becomes the stable one (the snapshot), the Deployment is resumed until its
//     controller has made the ReplicaSet of the new template, paused again, then scaled back
//     up to spec.replicas as the canary Deployment is scaled down, within the same bounds;
//     then the canary Deployment is deleted. Only then is the release Completed.
//   - Abort (spec.rollback, a failed check, an exceeded deadline with progressDeadlineAbort):
//     the snapshot's template is written back to the Deployment, which grows back before the
//     canary Deployment goes (pair_rollback.go); then the canary Deployment is deleted.

// kindDeployment is the targetRef kind of a Canary that releases a Deployment.
const kindDeployment = "Deployment"

// deploymentRelease is the release mode of a Deployment named by spec.targetRef.
type deploymentRelease struct{}

// deploymentNames are the target Deployment and the temporary canary one.
func (deploymentRelease) deploymentNames(cn *v1alpha1.Canary) []string {
	return []string{cn.Spec.TargetRef.Name, temporaryCanaryName(cn.Name)}
}

func (deploymentRelease) target(cn *v1alpha1.Canary) *v1alpha1.CanaryTargetRef {
	return cn.Spec.TargetRef
}

// observe reads the target Deployment and the temporary canary Deployment (nil when they do
// not exist), who holds the target, and what spec.trafficRouting names.
func (deploymentRelease) observe(ctx context.Context, c *Controller, obs *observed) error {
	cn := obs.canary
	var err error
	if obs.stable, err = c.deployment(cn.Namespace, cn.Spec.TargetRef.Name); err != nil {
		return err
	}
	if obs.canaryDep, err = c.deployment(cn.Namespace, temporaryCanaryName(cn.Name)); err != nil {
		return err
	}
	obs.canary, obs.followsTarget = followDeployment(cn, obs.stable) // autoscale.go
	obs.targetHolder = c.holder(cn)
	if obs.autoscaler, err = c.autoscalerOf(cn.Namespace, cn.Spec.TargetRef.Name); err != nil {
		return err
	}
	obs.traffic, err = c.observeTraffic(ctx, cn)
	return err
}

func (deploymentRelease) plan(d *decision) releasePlan {
	return newDeploymentPlan(d)
}

func newDeploymentPlan(d *decision) *deploymentPlan {
	r := &deploymentPlan{pairPlan: newPairPlan(d, pairNames{})}
	r.pairRollback, r.handOver = r.pairPlan.rollback, r.handOverSteps
	return r
}

// deploymentPlan is a Deployment target's side of one sync's plan: the pair's planner over the
// target (as the stable Deployment) and the temporary canary Deployment, and what the target
// adds to it.
type deploymentPlan struct {
	*pairPlan
	// pending: the target's template differs from the stable one recorded.
	pending bool
	// stableRev is the revision of the stable template; abortedRevision the one a rollback
	// this sync starts leaves.
	stableRev       string
	abortedRevision string
	// depWrites are the pauses and deletions decided, made before the pair's writes.
	depWrites []depTargetWrite
	// firstHold: the target is held for the first time this sync (its template just recorded).
	firstHold bool
	// pairRollback is the rollback of the two Deployments (the pair's, or a blue-green one's).
	pairRollback func()
	// handOver gives the release back to the target once its steps are complete (handOverSteps,
	// or a blue-green one).
	handOver func()
}

// begin refuses a target it cannot release, hands the target and the temporary canary
// Deployment to the pair's planner, holds a target first seen, and chooses between rolling
// back, releasing a new template, and holding the target (or handing it over after a release).
func (r *deploymentPlan) begin() course {
	cn := r.canary
	d, ref := r.obs.stable, cn.Spec.TargetRef
	tmp := temporaryCanaryName(cn.Name)
	switch {
	case d == nil:
		r.setDegraded(v1alpha1.ReasonTargetNotFound, fmt.Sprintf(
			"Deployment %q not found in namespace %q: nothing is changed until it exists", ref.Name, cn.Namespace))
		return decided
	case r.obs.targetHolder != "":
		r.setDegraded(v1alpha1.ReasonTargetHeld, fmt.Sprintf(
			"Deployment %q is released by Canary %q already: one Canary per workload; delete this one or that one", ref.Name, r.obs.targetHolder))
		return decided
	case r.obs.canaryDep != nil && !isOwnedBy(r.obs.canaryDep, cn):
		r.setDegraded(v1alpha1.ReasonCanaryNameConflict, fmt.Sprintf(
			"Deployment %q already exists and is not owned by this Canary, which releases Deployment %q through a canary Deployment of that name: rename or delete it; nothing is changed until then",
			tmp, ref.Name))
		return decided
	case !r.obs.followsTarget && r.refuseAutoscaled(ref.Name): // autoscale.go
		return decided
	}
	r.names = pairNames{stable: ref.Name, canary: tmp, template: temporaryTemplate(cn.Name, &d.Spec.Template, r.obs.traffic)}
	r.stable, r.canaryDep = d, r.obs.canaryDep

	snap, err := recordedSnapshot(cn)
	if err != nil || snap == nil || snap.Deployment != d.Name {
		r.holdFirst()
		return decided
	}
	r.stableRev = templateRevision(&snap.Template)
	r.pending = !equality.Semantic.DeepEqual(d.Spec.Template, snap.Template)
	if r.pending && d.Spec.Paused {
		r.stable = pausedView(d)
	}
	if r.refuseAutoscaledRelease() { // autoscale.go
		return decided
	}
	r.recordTotal() // autoscale.go
	return r.course()
}

// course decides between the release, the rollback, and the hold (or hand-over) of a target
// whose stable template is recorded.
func (r *deploymentPlan) course() course {
	cn, st := r.canary, &r.status
	rollback := cn.Spec.Rollback || r.aborted()
	if a := st.Abort; a != nil && r.aborted() && !cn.Spec.Rollback && r.pending && st.Phase == v1alpha1.CanaryRolledBack {
		// The release rolled back by itself and the template changed since: that change is the
		// next release (the Deployment in Git moved on), from step 1.
		r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted,
			"Deployment %q has a new template after the release aborted at step %d (%s): releasing it from step 1", r.stable.Name, a.Step, a.Reason)
		st.Abort, st.Phase = nil, v1alpha1.CanaryProgressing
		st.Target = nil // whatever the template, it is a new release
		rollback = false
	}
	switch {
	case rollback:
		return rollingBack
	case r.pending:
		r.startRelease()
		return progressing
	default:
		return holding
	}
}

// startRelease starts the release of a new template (or one changed mid-release) from step 1,
// the target paused first: it must not roll the new template by itself.
func (r *deploymentPlan) startRelease() {
	d, st := r.stable, &r.status
	update := templateRevision(&d.Spec.Template)
	if st.Target == nil || st.Target.UpdateRevision != update {
		r.restart()
		r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted,
			"Deployment %q has a new pod template %s: releasing it through the steps from template %s, on canary Deployment %q",
			d.Name, update, r.stableRev, r.names.canary)
	}
	r.setPaused(true)
}

// settle starts the hand-over once every step is complete and the target has no pod left: the
// new template is the stable one from now on, and the target is resumed so that its controller
// makes the ReplicaSet of it (with no replicas); handOver then pauses it and scales it up.
func (r *deploymentPlan) settle() {
	if !r.completed() || !stableGone(r.stable) {
		return
	}
	r.handingBack = true
	r.recordStable()
	r.setPaused(false)
	r.handOverMessage()
	// The release completes at the end of the hand-over, not with its last step.
	r.events = slices.DeleteFunc(r.events, func(e event) bool { return e.reason == v1alpha1.EventReleaseComplete })
}

// hold keeps a target with nothing to release held, handing it over first when a temporary
// canary Deployment is left from the release.
func (r *deploymentPlan) hold() {
	r.handingBack = true
	if r.canaryDep != nil {
		r.handOver()
		return
	}
	r.holdDeploymentTarget()
}

// rollback returns the target to its stable template (pair_rollback.go: the snapshot's
// template written back, the target grown back before the canary goes), then deletes the
// temporary canary Deployment and holds the target again.
func (r *deploymentPlan) rollback() {
	d := r.stable
	if r.pending {
		r.abortedRevision = templateRevision(&d.Spec.Template)
	}
	if !d.Spec.Paused && statusObserved(d) {
		r.setPaused(true)
	}
	r.pairRollback()
	if r.phase != v1alpha1.CanaryRolledBack {
		return
	}
	r.deleteTemporary()
	r.message = fmt.Sprintf("rolled back: Deployment %q serves %d pods on its previous template, held paused; canary Deployment %q deleted",
		d.Name, r.canary.Spec.Replicas, temporaryCanaryName(r.canary.Name))
}

// temporaryCanaryName is the name of the canary Deployment of a Canary that releases a
// Deployment through spec.targetRef.
func temporaryCanaryName(canary string) string { return v1alpha1.TemporaryCanaryName(canary) }

// templateRevision names a pod template in status.target: a hash of it.
func templateRevision(t *corev1.PodTemplateSpec) string {
	h := fnv.New32a()
	raw, _ := json.Marshal(t) // a pod template always encodes
	h.Write(raw)
	return fmt.Sprintf("%08x", h.Sum32())
}

// depTargetWriteKind says what a depTargetWrite does.
type depTargetWriteKind int

const (
	pauseTarget depTargetWriteKind = iota
	resumeTarget
	deleteTemporary
)

// depTargetWrite is one decided write of a Deployment target or its temporary canary beyond
// the scales and template writes of the stableRef + canary release.
type depTargetWrite struct {
	kind depTargetWriteKind
	name string
	uid  types.UID // deleteTemporary: the Deployment deleted, as a precondition
}

// temporaryTemplate is the template of the temporary canary Deployment: the target's, with the
// label naming the Canary, which its selector adds to the target's labels so that the two
// Deployments never select each other's pods for their own; with traffic routing, its labels
// are made to match the canary Service and not the stable one (trafficLabels).
func temporaryTemplate(canary string, t *corev1.PodTemplateSpec, tr *trafficObserved) *corev1.PodTemplateSpec {
	out := t.DeepCopy()
	out.Labels = maps.Clone(out.Labels)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	trafficLabels(out.Labels, tr)
	out.Labels[v1alpha1.LabelCanaryName] = canary
	return out
}

// pausedView is the paused target as the release counts it: its pods all run its stable
// ReplicaSet, which a paused Deployment only scales, so none of them is being replaced, though
// its status counts none as updated (its template is the new one, which has no ReplicaSet).
func pausedView(d *appsv1.Deployment) *appsv1.Deployment {
	v := d.DeepCopy()
	v.Status.UpdatedReplicas = v.Status.Replicas
	return v
}

// holdFirst records the target's template as the stable one, once its own rollout is done, and
// pauses it: from then on a template change is a release.
func (r *deploymentPlan) holdFirst() {
	d := r.stable
	if rollingOut(d) || d.Status.AvailableReplicas < replicasOf(d) {
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
		r.message = fmt.Sprintf("waiting for Deployment %q to finish its own rollout (%d of %d pods updated, %d available) before holding it",
			d.Name, d.Status.UpdatedReplicas, replicasOf(d), d.Status.AvailableReplicas)
		if d.Spec.Paused {
			r.message += fmt.Sprintf("; it is paused mid-rollout: resume it (kubectl rollout resume deploy/%s) or undo its template", d.Name)
		}
		return
	}
	r.recordStable()
	r.firstHold = true
	r.holdDeploymentTarget()
}

// recordStable decides to record the target's template as the stable one.
func (r *deploymentPlan) recordStable() {
	d := r.stable
	raw, _ := json.Marshal(stableSnapshot{ // a pod template always encodes
		Deployment: d.Name,
		Replicas:   r.canary.Spec.Replicas,
		Template:   d.Spec.Template,
	})
	r.newSnapshot = string(raw)
	r.stableRev = templateRevision(&d.Spec.Template)
}

// setPaused decides to pause or resume the target, unless it already is.
func (r *deploymentPlan) setPaused(paused bool) {
	d := r.stable
	if d.Spec.Paused == paused {
		return
	}
	kind := pauseTarget
	if !paused {
		kind = resumeTarget
	}
	r.depWrites = append(r.depWrites, depTargetWrite{kind: kind, name: d.Name})
	d = d.DeepCopy()
	d.Spec.Paused = paused
	r.stable = d
}

// holdDeploymentTarget keeps a target with nothing to release paused (at spec.replicas when it
// is set; without it the Deployment's replicas are its own, autoscale.go), and reports the last
// release.
func (r *deploymentPlan) holdDeploymentTarget() {
	d, cn, st := r.stable, r.canary, &r.status
	if !r.obs.followsTarget && replicasOf(d) != cn.Spec.Replicas {
		if r.firstHold {
			r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
				"spec.replicas is %d but Deployment %q has %d replicas: the steps count its pods; set spec.replicas to %d (nothing is changed until then)",
				cn.Spec.Replicas, d.Name, replicasOf(d), replicasOf(d)))
			return
		}
		r.followTotal() // autoscale.go
	}
	r.setPaused(true)
	n := int32(len(r.steps))
	rolledBack := cn.Spec.Rollback || r.aborted()
	switch {
	case rolledBack:
		r.phase, r.reason = v1alpha1.CanaryRolledBack, v1alpha1.ReasonRolledBack
		r.message = fmt.Sprintf("rolled back: Deployment %q serves %d pods on its previous template; held paused", d.Name, cn.Spec.Replicas)
	case st.CurrentBatch > 0 && n > 0:
		for i := range st.Batches {
			st.Batches[i].State = v1alpha1.BatchCompleted
		}
		st.CurrentBatch = n
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonCompleted
		r.message = fmt.Sprintf("all %d steps complete: Deployment %q runs the new template, %d of %d pods available; held paused until the next template change",
			n, d.Name, d.Status.AvailableReplicas, cn.Spec.Replicas)
	default:
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding
		r.message = fmt.Sprintf("holding Deployment %q paused at template %s: the next change of its pod template is released through the steps",
			d.Name, r.stableRev)
	}
}

// handOverSteps scales the target (its new template's ReplicaSet) back up to spec.replicas while
// the temporary canary Deployment is scaled down as the target's pods become available, within
// the surge bound; then deletes the canary Deployment and completes the release.
func (r *deploymentPlan) handOverSteps() {
	replicas := r.canary.Spec.Replicas
	if !r.pauseForHandOver() {
		return
	}
	if cur := replicasOf(r.stable); cur < replicas {
		if grow := min(replicas, cur+r.surgeRoom()); grow != cur {
			r.scaleStable(grow)
		}
	}
	if r.canaryDep != nil && r.stableReady(0) {
		keep := max(0, replicas-r.stable.Status.AvailableReplicas)
		if keep < replicasOf(r.canaryDep) {
			r.scaleCanary(keep)
		}
	}
	r.finishHandOver()
}

// pauseForHandOver pauses the target again once its controller made the ReplicaSet of its new
// template; false while it has not.
func (r *deploymentPlan) pauseForHandOver() bool {
	d := r.stable
	if !d.Spec.Paused {
		if !statusObserved(d) {
			r.handOverMessage() // its controller has not made the new ReplicaSet yet
			return false
		}
		r.setPaused(true)
	}
	return true
}

// finishHandOver deletes the temporary canary Deployment and completes the release once the
// target serves every replica and the temporary Deployment has no pod left.
func (r *deploymentPlan) finishHandOver() {
	d := r.stable
	replicas := r.canary.Spec.Replicas
	if !r.stableReady(replicas) || podsOf(r.canaryDep) > 0 || !statusObserved(r.canaryDep) {
		r.handOverMessage()
		return
	}
	r.deleteTemporary()
	if r.status.Phase != v1alpha1.CanaryCompleted {
		r.event(corev1.EventTypeNormal, v1alpha1.EventReleaseComplete,
			"all %d steps complete: Deployment %q serves %d pods on its new template; canary Deployment %q deleted",
			len(r.steps), d.Name, replicas, r.canaryDep.Name)
	}
	r.holdDeploymentTarget()
}

// handOverMessage describes the hand-over.
func (r *deploymentPlan) handOverMessage() {
	r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
	r.message = fmt.Sprintf("all %d steps complete, handing over: Deployment %q has %d of %d pods available on the new template; canary Deployment %q keeps %d until they are",
		len(r.steps), r.stable.Name, r.stable.Status.AvailableReplicas, r.canary.Spec.Replicas, temporaryCanaryName(r.canary.Name), podsOf(r.canaryDep))
}

// deleteTemporary decides to delete the temporary canary Deployment.
func (r *deploymentPlan) deleteTemporary() {
	if r.canaryDep == nil {
		return
	}
	r.depWrites = append(r.depWrites, depTargetWrite{kind: deleteTemporary, name: r.canaryDep.Name, uid: r.canaryDep.UID})
	r.status.ReleaseReplicas = 0 // the release is over: the Deployment serves the total alone
}

// execute makes the target's pause and resume and the deletion of the temporary canary
// Deployment, then the pair's writes, stopping at the first the API server refuses.
func (r *deploymentPlan) execute(ctx context.Context, c *Controller) (*failure, error) {
	deployments := c.kubeClient.AppsV1().Deployments(r.canary.Namespace)
	for _, w := range r.depWrites {
		var err error
		var doing, done string
		switch w.kind {
		case pauseTarget, resumeTarget:
			paused := w.kind == pauseTarget
			doing = fmt.Sprintf("setting spec.paused of Deployment %q to %t", w.name, paused)
			if f, err := c.contestDeployment(ctx, r.obs, deploymentPaused, fmt.Sprint(paused)); f != nil || err != nil { // contest.go
				return f, err
			}
			var out *appsv1.Deployment
			out, err = deployments.Patch(ctx, w.name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"paused":%t}}`, paused),
				metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerAgent})
			if err == nil {
				c.expectWrite(r.canary.Namespace+"/"+w.name, r.obs.stable, out)
				c.wroteDeployment(r.obs, deploymentPaused, out)
			}
			done = fmt.Sprintf("resumed Deployment %q: its controller makes the ReplicaSet of its new template", w.name)
			if paused {
				done = fmt.Sprintf("paused Deployment %q: a change of its template makes no pod until the Canary releases it", w.name)
			}
		case deleteTemporary:
			doing = fmt.Sprintf("deleting canary Deployment %q", w.name)
			err = deployments.Delete(ctx, w.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &w.uid}})
			if apierrors.IsNotFound(err) {
				err = nil
			}
			done = fmt.Sprintf("deleted canary Deployment %q: the release is over", w.name)
		}
		if err != nil {
			f := &failure{reason: v1alpha1.ReasonFailedUpdate, message: fmt.Sprintf("%s: %v", doing, err)}
			c.Recorder.Eventf(r.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
			return f, fmt.Errorf("%s: %w", doing, err)
		}
		reason := v1alpha1.EventTargetPaused
		if w.kind == deleteTemporary {
			reason = v1alpha1.EventCanaryDeleted
		}
		c.Recorder.Event(r.canary, corev1.EventTypeNormal, reason, done)
	}
	return r.pairPlan.execute(ctx, c) // then the scales and template writes of the pair
}

// fillStatus fills the replica counts and status.target of a Canary that releases a
// Deployment: the target is the stable Deployment, the temporary one the canary.
func (r *deploymentPlan) fillStatus(st *v1alpha1.CanaryStatus) {
	d := r.stable
	if d == nil {
		st.Target = nil
		return
	}
	if r.canaryDep != nil {
		st.CanaryReplicas = replicasOf(r.canaryDep)
		st.CanaryAvailable = r.canaryAvailable()
	}
	t := &v1alpha1.CanaryTargetStatus{
		StableRevision:    r.stableRev,
		UpdateRevision:    templateRevision(&d.Spec.Template),
		UpdatedReplicas:   st.CanaryReplicas,
		AvailableReplicas: d.Status.AvailableReplicas + st.CanaryAvailable,
	}
	if t.StableRevision == "" {
		t.StableRevision = t.UpdateRevision
	}
	if st.Target != nil {
		t.AbortedRevision, t.AbortedRetries = st.Target.AbortedRevision, st.Target.AbortedRetries
	}
	if r.abortedRevision != "" && r.abortedRevision != t.StableRevision {
		t.AbortedRevision, t.AbortedRetries = r.abortedRevision, r.canary.Spec.Retries
	}
	st.Target = t
	r.stableStatus(st)
}

// stableTemplate reports whether d's template is the stable one cn recorded (true when cn
// recorded none: nothing was released).
func stableTemplate(cn *v1alpha1.Canary, d *appsv1.Deployment) bool {
	snap, err := recordedSnapshot(cn)
	if err != nil || snap == nil || snap.Deployment != d.Name {
		return true
	}
	return equality.Semantic.DeepEqual(snap.Template, d.Spec.Template)
}

// releaseHold, as a Canary that releases a Deployment is deleted, resumes the
// Deployment when no release is under way, so that it rolls its template by itself again; in
// the middle of a release it leaves it paused (resuming it would roll the new template without
// steps) and says so. The temporary canary Deployment is orphaned, as any canary Deployment.
func (deploymentRelease) releaseHold(ctx context.Context, c *Controller, cn *v1alpha1.Canary) error {
	if c.holder(cn) != "" {
		return nil
	}
	name := cn.Spec.TargetRef.Name
	d, err := c.kubeClient.AppsV1().Deployments(cn.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Deployment %s: %w", name, err)
	}
	if !d.Spec.Paused {
		return nil
	}
	tmp, err := c.kubeClient.AppsV1().Deployments(cn.Namespace).Get(ctx, temporaryCanaryName(cn.Name), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Deployment %s: %w", temporaryCanaryName(cn.Name), err)
	}
	if err == nil || !stableTemplate(cn, d) {
		// Mid-release: resumed, the Deployment would roll the new template without steps.
		canaryPods := int32(0)
		if err == nil {
			canaryPods = replicasOf(tmp)
		}
		c.eventf(cn, corev1.EventTypeWarning, v1alpha1.EventTargetPaused,
			"Canary deleted mid-release: Deployment %q stays paused with %d replicas and canary Deployment %q keeps %d; resume it to roll its template (kubectl rollout resume deploy/%s), then delete deploy/%s",
			name, replicasOf(d), temporaryCanaryName(cn.Name), canaryPods, name, temporaryCanaryName(cn.Name))
		return nil
	}
	patch := []byte(`{"spec":{"paused":false}}`)
	if _, err := c.kubeClient.AppsV1().Deployments(cn.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("resuming Deployment %s: %w", name, err)
	}
	c.eventf(cn, corev1.EventTypeNormal, v1alpha1.EventTargetPaused,
		"Canary deleted: Deployment %q is no longer held (resumed) and rolls its template by itself again", name)
	return nil
}
