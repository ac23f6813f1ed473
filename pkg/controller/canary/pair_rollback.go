package canary

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// stableSnapshot is the stable Deployment as it was when a release began, kept in the Canary's
// v1alpha1.AnnotationStableSnapshot.
type stableSnapshot struct {
	// Deployment is the name of the stable Deployment the snapshot was taken of.
	Deployment string `json:"deployment"`
	// Replicas is the stable Deployment's spec.replicas when the release began.
	Replicas int32 `json:"replicas"`
	// Template is the stable Deployment's pod template when the release began.
	Template corev1.PodTemplateSpec `json:"template"`
}

// rollback returns all capacity to the stable Deployment: the stable template is restored from
// the snapshot if it changed, and the stable Deployment grows back to spec.replicas as fast as
// the surge budget allows; the canary Deployment shrinks to what the stable pods available do
// not yet cover (never taking capacity below spec.replicas), down to 0.
func (r *pairPlan) rollback() {
	cn := r.canary
	st := &r.status
	replicas := cn.Spec.Replicas
	if !wasRollingBack(st) {
		why := "rollback requested (spec.rollback)"
		if st.Abort != nil {
			why = "release aborted (" + st.Abort.Reason + ")"
		}
		r.event(corev1.EventTypeNormal, v1alpha1.EventRollingBack,
			"%s at batch %d: scaling stable %q back to %d before the canary goes", why, st.CurrentBatch, r.names.stable, replicas)
	}

	snap := r.usableSnapshot()
	restored := snap == nil || equality.Semantic.DeepEqual(snap.Template, r.stable.Spec.Template)
	grow := replicas
	if cur := replicasOf(r.stable); cur < replicas {
		grow = min(replicas, cur+r.surgeRoom())
	}
	switch {
	case !restored:
		r.restoreStable(snap, max(grow, replicasOf(r.stable)))
	case replicasOf(r.stable) != grow:
		r.scaleStable(grow)
	}

	// The canary goes once the stable Deployment has every replica available on its restored
	// template. While the surge budget holds the stable Deployment below spec.replicas, the
	// canary gives up what the available stable pods already cover, to make room for more.
	if restored && r.canaryDep != nil && r.stableReady(0) {
		keep := max(0, replicas-r.stable.Status.AvailableReplicas)
		if replicasOf(r.stable) >= replicas && keep > 0 {
			keep = replicasOf(r.canaryDep) // full size: wait for all of them, then 0
		}
		if keep < replicasOf(r.canaryDep) {
			r.scaleCanary(keep)
		}
	}
	r.describeRollback(restored)
}

// describeRollback sets the phase and message of a rollback.
func (r *pairPlan) describeRollback(restored bool) {
	replicas := r.canary.Spec.Replicas
	canaryLeft := podsOf(r.canaryDep) // terminating pods are left until gone
	switch {
	case !restored || !r.stableReady(replicas):
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling back: stable at %d of %d, %d available; the canary keeps %d pods until stable pods replace them",
			replicasOf(r.stable), replicas, r.stable.Status.AvailableReplicas, canaryLeft)
	case canaryLeft > 0:
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling back: %d stable pods available; scaling the canary down to 0 (%d pods left)",
			r.stable.Status.AvailableReplicas, canaryLeft)
	default:
		r.phase, r.reason = v1alpha1.CanaryRolledBack, v1alpha1.ReasonRolledBack
		r.message = fmt.Sprintf("rolled back: stable %q serves %d pods, the canary none", r.stable.Name, replicas)
		if r.status.Phase != v1alpha1.CanaryRolledBack {
			r.event(corev1.EventTypeNormal, v1alpha1.EventRolledBack, "%s", r.message)
		}
	}
}

// usableSnapshot is the snapshot of the stable Deployment to restore, nil when there is none
// for it (reported once).
func (r *pairPlan) usableSnapshot() *stableSnapshot {
	snap, err := recordedSnapshot(r.canary)
	if err == nil && snap != nil && snap.Deployment == r.stable.Name {
		return snap
	}
	if !wasRollingBack(&r.status) {
		r.event(corev1.EventTypeWarning, v1alpha1.EventSnapshotMissing,
			"no usable %s annotation (%v): the stable pod template is kept as it is", v1alpha1.AnnotationStableSnapshot, err)
	}
	return nil
}

// recordedSnapshot decodes the Canary's v1alpha1.AnnotationStableSnapshot; nil when there is none.
func recordedSnapshot(cn *v1alpha1.Canary) (*stableSnapshot, error) {
	raw, ok := cn.Annotations[v1alpha1.AnnotationStableSnapshot]
	if !ok {
		return nil, nil
	}
	var s stableSnapshot
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, fmt.Errorf("decoding annotation %s: %w", v1alpha1.AnnotationStableSnapshot, err)
	}
	return &s, nil
}

// ensureSnapshot decides to record the stable Deployment in the Canary's
// v1alpha1.AnnotationStableSnapshot before the release begins, unless a snapshot of that
// Deployment is already there.
func (r *pairPlan) ensureSnapshot() {
	if s, err := recordedSnapshot(r.canary); err == nil && s != nil && s.Deployment == r.stable.Name {
		return
	}
	raw, _ := json.Marshal(stableSnapshot{ // a pod template always encodes
		Deployment: r.stable.Name,
		Replicas:   replicasOf(r.stable),
		Template:   r.stable.Spec.Template,
	})
	r.newSnapshot = string(raw)
}

// restoreStable decides to put the snapshot's pod template back on the stable Deployment and set
// its replicas, in one JSON patch (a merge patch would merge the old template into the new one
// instead of replacing it).
func (r *pairPlan) restoreStable(snap *stableSnapshot, replicas int32) {
	d := r.stable.DeepCopy()
	patch, _ := json.Marshal([]map[string]any{ // a pod template always encodes
		{"op": "replace", "path": "/spec/template", "value": snap.Template},
		{"op": "replace", "path": "/spec/replicas", "value": replicas},
	})
	from := replicasOf(d)
	d.Spec.Template = snap.Template
	d.Spec.Replicas = &replicas
	r.stable, r.stableRest = d, true
	r.writes = append(r.writes, deploymentWrite{kind: restoreStable, object: d.DeepCopy(), patch: patch, from: from, to: replicas})
}
