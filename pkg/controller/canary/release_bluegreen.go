package canary

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Blue-green (spec.blueGreen with stableRef + canary; docs/canary.md, "Blue-green"): the pair's
// two Deployments, the canary one brought up at full size beside the stable one, which keeps
// every replica until the release completes. The pods of each side carry label
// v1alpha1.LabelBlueGreen, whose value is the name of their Deployment; the release switches
// traffic by writing that one key of the selectors of spec.blueGreen's two Services: the
// active Service selects the stable pods until the switch step (v1alpha1.BlueGreenSwitchStep)
// starts, the canary pods after it, and the stable pods again as soon as a rollback has them all
// available; the preview Service selects the canary pods.
//
// The steps (v1alpha1.BlueGreenSteps) are run by the step machine like any other: the preview's
// bake is the pre-promotion analysis and the promotion, the switch step's the post-promotion
// analysis, the last step's the scale-down delay. route keeps the active side whole: no pod of
// the side the active Service selects (after this sync's writes) goes, and no canary pod comes
// before the active Service is pinned to the stable pods.
//
// With spec.trafficRouting the switch is the HTTPRoute's weights instead (docs/canary.md,
// "Blue-green through an HTTPRoute"): the route's stable and canary Services are the active and
// preview Services (the schema requires it), each selecting its side by the user's own labels;
// the agent writes no selector and adds no label to the stable pods, and the pair's traffic
// planner (pair_traffic.go) moves the canary weight from 0 to 100 at the switch step and back
// to 0 on a rollback, with its holds: no canary pod goes while the route gives it weight, no
// stable pod while the route gives it weight.

// blueGreenRelease is the release mode of a blue-green Deployment pair: the pair's names,
// watches and (no) hold, with its own observation and planner.
type blueGreenRelease struct{ pairRelease }

// observe reads the pair's Deployments and the two Services.
func (blueGreenRelease) observe(ctx context.Context, c *Controller, obs *observed) error {
	if err := (pairRelease{}).observe(ctx, c, obs); err != nil {
		return err
	}
	return observeBlueGreenServices(ctx, c, obs)
}

// observeBlueGreenServices reads the two Services of spec.blueGreen, and gives the planner the
// reader of EndpointSlices its whole route moves wait on.
func observeBlueGreenServices(ctx context.Context, c *Controller, obs *observed) error {
	cn := obs.canary
	obs.endpoints = c.endpointsOf(ctx, cn.Namespace+"/"+cn.Name, cn.Namespace)
	var err error
	if obs.blueGreenClaim, err = c.blueGreenClaimOf(cn); err != nil { // bluegreen_claims.go
		return err
	}
	if obs.activeSvc, err = c.getService(ctx, cn.Namespace, cn.Spec.BlueGreen.ActiveService); err != nil {
		return err
	}
	obs.previewSvc, err = c.getService(ctx, cn.Namespace, cn.Spec.BlueGreen.PreviewService)
	return err
}

// getService reads a Service from the API server (nil when it does not exist): the agent caches
// no Service, and a blue-green Canary reads two per sync.
func (c *Controller) getService(ctx context.Context, ns, name string) (*corev1.Service, error) {
	svc, err := c.kubeClient.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return svc, err
}

func (blueGreenRelease) plan(d *decision) releasePlan {
	names := specPair(d.canary)
	names.template = withSideLabel(names.template, names.canary)
	return &blueGreenPlan{pairPlan: newPairPlan(d, names)}
}

// withSideLabel is a copy of template whose pods carry the blue-green label of side.
func withSideLabel(t *corev1.PodTemplateSpec, side string) *corev1.PodTemplateSpec {
	t = t.DeepCopy()
	t.Labels = maps.Clone(t.Labels)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[v1alpha1.LabelBlueGreen] = side
	return t
}

// blueGreenPlan is a blue-green release's side of one sync's plan: the pair's planner (its
// Deployments, writes, snapshot and status) with the label of the stable pods and the Services'
// selectors.
type blueGreenPlan struct {
	*pairPlan
	// userLabels: the pods of the stable side carry the blue-green label by the user's template
	// (a Deployment target, checked as the release begins); the agent never adds it.
	userLabels bool
	// labelStable is the merge patch adding the blue-green label to the stable pod template
	// (which rolls its pods once), nil for none.
	labelStable []byte
	// active is the side the active Service selects after this sync's writes ("" for none yet);
	// serviceWrites are the selector writes, in order.
	// preview is the side the preview Service selects after them ("" for none decided).
	active, preview string
	serviceWrites   []serviceWrite
}

// serviceWrite sets the blue-green key of a Service's selector from one side to another.
type serviceWrite struct{ service, from, to string }

// begin is the pair's, refusing besides Deployment names too long for a label value and
// Services that do not exist.
func (r *blueGreenPlan) begin() course {
	c := r.pairPlan.begin()
	if c == decided || !r.sideNamesFit(r.names.stable, r.names.canary) || !r.servicesExist() {
		return decided
	}
	return c
}

// sideNamesFit refuses Deployment names too long for the value of the blue-green label.
func (r *blueGreenPlan) sideNamesFit(names ...string) bool {
	for _, name := range names {
		if len(name) > 63 {
			r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
				"Deployment name %q is longer than 63 characters: a blue-green release labels the pods of each side with the name of its Deployment (label %s)",
				name, v1alpha1.LabelBlueGreen))
			return false
		}
	}
	return true
}

// servicesExist refuses Services of spec.blueGreen that do not exist, or that another
// blue-green Canary holds.
func (r *blueGreenPlan) servicesExist() bool {
	if r.refuseClaimed() { // bluegreen_claims.go
		return false
	}
	bg := r.canary.Spec.BlueGreen
	for _, s := range []struct {
		name string
		svc  *corev1.Service
	}{{bg.ActiveService, r.obs.activeSvc}, {bg.PreviewService, r.obs.previewSvc}} {
		if s.svc == nil {
			r.setDegraded(v1alpha1.ReasonServiceNotFound, fmt.Sprintf(
				"Service %q of spec.blueGreen not found in namespace %q: nothing is changed until it exists", s.name, r.canary.Namespace))
			return false
		}
	}
	return true
}

// beforeFirstStep labels the stable pod template, when it is not yet, before the snapshot is
// taken: a rollback restores the snapshot, whose pods the active Service must keep selecting.
func (r *blueGreenPlan) beforeFirstStep() {
	if !r.byRoute() && r.stable.Spec.Template.Labels[v1alpha1.LabelBlueGreen] != r.names.stable {
		d := r.stable.DeepCopy()
		d.Spec.Template = *withSideLabel(&d.Spec.Template, r.names.stable)
		r.labelStable = fmt.Appendf(nil, `{"spec":{"template":{"metadata":{"labels":{%q:%q}}}}}`, v1alpha1.LabelBlueGreen, r.names.stable)
		r.stable, r.stableRest = d, true
	}
	r.ensureSnapshot()
}

// stableLabeled reports whether every stable pod carries the blue-green label, as last observed.
func (r *blueGreenPlan) stableLabeled() bool {
	if r.userLabels {
		return true
	}
	s := r.obs.stable
	return r.labelStable == nil && s.Spec.Template.Labels[v1alpha1.LabelBlueGreen] == r.names.stable &&
		statusObserved(s) && s.Status.UpdatedReplicas == s.Status.Replicas
}

// move keeps the stable Deployment at spec.replicas until the release completes, then scales it
// to 0; once the stable pods carry the label, it creates the canary Deployment or scales it to
// target, the whole step at once: there is no surge bound. With hold nothing moves.
func (r *blueGreenPlan) move(target int32, hold bool) {
	want := r.canary.Spec.Replicas
	if r.completed() {
		want = 0
	}
	if cur := replicasOf(r.stable); cur != want && (!hold || want > cur) {
		r.scaleStable(want)
	}
	if hold || (!r.byRoute() && !r.stableLabeled()) {
		return
	}
	d := r.canaryDep
	switch {
	case d == nil:
		r.createCanary(target)
	case r.updateCanaryTemplate(target):
	case statusObserved(d) && replicasOf(d) != target:
		r.scaleCanary(target)
	}
}

// switched reports whether a blue-green release is past its switch: the active Service (or the
// route) sends every request to the canary pods.
func (r *decision) switched() bool {
	return !r.rollsBack() && !r.aborted() && r.status.CurrentBatch >= v1alpha1.BlueGreenSwitchStep(&r.canary.Spec)
}

// byRoute reports whether the release switches by the HTTPRoute's weights rather than by the
// Services' selectors.
func (r *decision) byRoute() bool { return r.canary.Spec.TrafficRouting != nil }

// blueGreenWeight is the canary weight of a blue-green release switching by the route: none
// before the switch, all of it from the switch on, none again on a rollback once every stable
// pod is available (until then the new pods keep what they have).
func (r *pairPlan) blueGreenWeight() int32 {
	if r.canary.Spec.TargetRef != nil {
		return r.blueGreenTargetWeight() // release_bluegreen_target.go
	}
	switch {
	case r.rollsBack() && !r.stableReady(r.canary.Spec.Replicas):
		return r.traffic.current.CanaryWeight
	case r.rollsBack():
		return 0
	case r.switched() || r.phase == v1alpha1.CanaryCompleted:
		return 100
	}
	return 0
}

// routeSide is the side the route sends every request to after this sync's writes, "" while it
// splits them (or cannot be used).
func (r *blueGreenPlan) routeSide() string {
	t := r.traffic
	if t == nil || t.reason != "" {
		return ""
	}
	w := t.current.CanaryWeight
	if t.patch != nil {
		w = t.weight
	}
	switch w {
	case 0:
		return r.names.stable
	case 100:
		return r.names.canary
	}
	return ""
}

// holdPreviewUntilPinned holds, before the switch, every write that makes or grows new pods
// until the route (after this sync's write, made first) gives them nothing: the preview gets
// no request through the route. With a pair the route is always set to 0 before the switch;
// a Deployment target's route keeps the temporary pods' weight while the target's pods are
// not all available (a template change after the switch, blueGreenTargetWeight).
func (r *blueGreenPlan) holdPreviewUntilPinned() {
	if r.switched() || r.rollsBack() || r.active == r.names.stable {
		return
	}
	r.holdWrites(func(w deploymentWrite) bool {
		return w.kind == createCanary || w.kind == updateCanary || w.kind == scaleCanary && w.to > w.from
	})
}

// route decides the Services' selectors, then holds back the Deployment writes that would take
// pods from the side the active Service selects, or bring canary pods up before it is pinned to
// the stable ones. The Services are written before any Deployment (execute).
func (r *blueGreenPlan) route() {
	if r.byRoute() {
		r.pairPlan.route()
		r.active = r.routeSide()
		r.holdPreviewUntilPinned()
		return
	}
	if r.degraded || r.obs.activeSvc == nil || r.obs.previewSvc == nil {
		return
	}
	bg := r.canary.Spec.BlueGreen
	stable, canary := r.names.stable, r.names.canary
	cur := r.obs.activeSvc.Spec.Selector[v1alpha1.LabelBlueGreen]
	r.active = cur
	switch {
	case r.handingBack && (r.canaryDep == nil || r.stableReady(r.canary.Spec.Replicas)):
		r.active = stable // a Deployment target's own pods, on the new template (release_bluegreen_target.go)
	case r.handingBack:
	case r.switched():
		r.active = canary
	case r.stableLabeled() && r.stableReady(r.canary.Spec.Replicas):
		r.active = stable
	}
	if r.active != cur {
		r.serviceWrites = append(r.serviceWrites, serviceWrite{bg.ActiveService, cur, r.active})
	}
	preview := canary
	if r.userLabels && (r.canaryDep == nil || r.handingBack && r.active == stable) {
		preview = stable // a Deployment target between releases, or handed over: its own pods
	}
	if r.active != "" {
		r.preview = preview
		if p := r.obs.previewSvc.Spec.Selector[v1alpha1.LabelBlueGreen]; p != preview {
			r.serviceWrites = append(r.serviceWrites, serviceWrite{bg.PreviewService, p, preview})
		}
	}
	r.holdWrites(func(w deploymentWrite) bool {
		switch {
		case w.kind == scaleStable && w.to < w.from:
			return r.active != canary
		case w.kind == scaleCanary && w.to < w.from:
			return r.active == canary
		case w.kind == scaleCanary && r.switched(): // spec.replicas grew after the switch
			return false
		case w.kind == createCanary || w.kind == updateCanary || w.kind == scaleCanary:
			return r.active != stable
		}
		return false
	})
}

// rollback switches back: the stable Deployment returns to spec.replicas (its snapshot's
// template restored if it changed) at once, since the canary pods keep serving meanwhile; once
// every stable pod is available, the active Service selects them again (route) and the canary
// Deployment is scaled to 0.
func (r *blueGreenPlan) rollback() {
	st := &r.status
	replicas := r.canary.Spec.Replicas
	if !wasRollingBack(st) {
		why := "rollback requested (spec.rollback)"
		if st.Abort != nil {
			why = "release aborted (" + st.Abort.Reason + ")"
		}
		r.event(corev1.EventTypeNormal, v1alpha1.EventRollingBack,
			"%s at step %d: switching back to stable %q, then scaling the new version down", why, st.CurrentBatch, r.names.stable)
	}
	snap := r.usableSnapshot()
	restored := snap == nil || equality.Semantic.DeepEqual(snap.Template, r.stable.Spec.Template)
	switch {
	case !restored:
		r.restoreStable(snap, replicas)
	case replicasOf(r.stable) != replicas:
		r.scaleStable(replicas)
	}
	if restored && r.canaryDep != nil && replicasOf(r.canaryDep) > 0 && r.stableReady(replicas) {
		r.scaleCanary(0)
	}
	r.describeRollback(restored)
}

// fillStatus fills the pair's replica counts and where the Services point.
func (r *blueGreenPlan) fillStatus(st *v1alpha1.CanaryStatus) {
	r.pairPlan.fillStatus(st)
	r.fillBlueGreenStatus(st)
}

// fillBlueGreenStatus fills status.blueGreen: where the Services point, and when the old
// version is scaled down.
func (r *blueGreenPlan) fillBlueGreenStatus(st *v1alpha1.CanaryStatus) {
	bs := &v1alpha1.CanaryBlueGreenStatus{Active: r.active, Preview: r.preview}
	switch {
	case r.byRoute():
		bs.Preview = r.names.canary
	case r.active == "" && r.obs.activeSvc != nil:
		bs.Active = r.obs.activeSvc.Spec.Selector[v1alpha1.LabelBlueGreen]
	}
	if p := r.obs.previewSvc; bs.Preview == "" && p != nil {
		bs.Preview = p.Spec.Selector[v1alpha1.LabelBlueGreen]
	}
	if n := int32(len(st.Batches)); n > 0 && st.CurrentBatch == n && !r.rollsBack() {
		if b := st.Batches[n-1]; b.State == v1alpha1.BatchBaking && b.PauseEndTime != nil {
			bs.ScaleDownTime = b.PauseEndTime.DeepCopy()
		}
	}
	st.BlueGreen = bs
}

// execute writes the Services' selectors, then the label of the stable pod template, then the
// pair's Deployment writes, stopping at the first the API server refuses.
func (r *blueGreenPlan) execute(ctx context.Context, c *Controller) (*failure, error) {
	if f, err := r.writeServices(ctx, c); f != nil || err != nil {
		return f, err
	}
	if r.labelStable != nil {
		out, err := c.kubeClient.AppsV1().Deployments(r.canary.Namespace).Patch(ctx, r.names.stable, types.MergePatchType, r.labelStable,
			metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerAgent})
		if err != nil {
			return r.refused(c, fmt.Sprintf("adding label %s to the pod template of stable Deployment %q", v1alpha1.LabelBlueGreen, r.names.stable), err)
		}
		c.expectWrite(r.canary.Namespace+"/"+r.names.stable, r.obs.stable, out)
		c.Recorder.Eventf(r.canary, corev1.EventTypeNormal, v1alpha1.EventStableLabeled,
			"added label %s=%s to the pod template of stable Deployment %q: its pods roll once, by its own strategy", v1alpha1.LabelBlueGreen, r.names.stable, r.names.stable)
	}
	return r.pairPlan.execute(ctx, c)
}

// writeServices writes the Services' selectors, in order.
func (r *blueGreenPlan) writeServices(ctx context.Context, c *Controller) (*failure, error) {
	for _, w := range r.serviceWrites {
		patch := fmt.Appendf(nil, `{"spec":{"selector":{%q:%q}}}`, v1alpha1.LabelBlueGreen, w.to)
		_, err := c.kubeClient.CoreV1().Services(r.canary.Namespace).Patch(ctx, w.service, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerAgent})
		if err != nil {
			return r.refused(c, fmt.Sprintf("setting the selector of Service %q to the pods of %q", w.service, w.to), err)
		}
		c.Recorder.Eventf(r.canary, corev1.EventTypeNormal, v1alpha1.EventServiceSwitched,
			"Service %q selects the pods of Deployment %q (selector %s=%s)", w.service, w.to, v1alpha1.LabelBlueGreen, w.to)
	}
	return nil, nil
}

// refused reports a write the API server refused, as a failure shown on the Canary.
func (r *blueGreenPlan) refused(c *Controller, doing string, err error) (*failure, error) {
	f := &failure{reason: v1alpha1.ReasonFailedUpdate, message: fmt.Sprintf("%s: %v", doing, err)}
	c.Recorder.Eventf(r.canary, corev1.EventTypeWarning, f.reason, "%s", f.message)
	return f, fmt.Errorf("%s: %w", doing, err)
}
