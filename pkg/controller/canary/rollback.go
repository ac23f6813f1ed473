package canary

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// StableSnapshot is the stable Deployment as it was when a release began, kept in the Canary's
// v1alpha1.AnnotationStableSnapshot.
type StableSnapshot struct {
	// Deployment is the name of the stable Deployment the snapshot was taken of.
	Deployment string `json:"deployment"`
	// Replicas is the stable Deployment's spec.replicas when the release began.
	Replicas int32 `json:"replicas"`
	// Template is the stable Deployment's pod template when the release began.
	Template corev1.PodTemplateSpec `json:"template"`
}

// rollback returns all capacity to the stable Deployment: first the stable template is restored
// from the snapshot if it changed and the stable Deployment scaled to spec.replicas; once that
// many stable pods are available, the canary Deployment is scaled to 0.
func (r *reconciler) rollback() {
	cn := r.canary
	st := &r.status
	replicas := cn.Spec.Replicas
	if !wasRollingBack(st) {
		why := "rollback requested (spec.rollback)"
		if st.Abort != nil {
			why = "release aborted (" + st.Abort.Reason + ")"
		}
		r.event(corev1.EventTypeNormal, v1alpha1.EventRollingBack,
			"%s at batch %d: scaling stable %q back to %d before the canary goes", why, st.CurrentBatch, cn.Spec.StableRef.Name, replicas)
	}

	snap, err := r.snapshot()
	if err != nil || snap == nil || snap.Deployment != r.stable.Name {
		if !wasRollingBack(st) {
			r.event(corev1.EventTypeWarning, v1alpha1.EventSnapshotMissing,
				"no usable %s annotation (%v): the stable pod template is kept as it is", v1alpha1.AnnotationStableSnapshot, err)
		}
		snap = nil
	}
	restored := snap == nil || equality.Semantic.DeepEqual(snap.Template, r.stable.Spec.Template)
	switch {
	case !restored:
		r.restoreStable(snap, replicas)
	case replicasOf(r.stable) != replicas:
		r.scaleStable(replicas)
	}

	canaryLeft := int32(0)
	if r.canaryDep != nil {
		canaryLeft = max(replicasOf(r.canaryDep), r.canaryDep.Status.Replicas)
	}
	ready := restored && r.stableReady(replicas)
	if ready && r.canaryDep != nil && replicasOf(r.canaryDep) != 0 {
		r.scaleCanary(0)
	}

	switch {
	case !ready:
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling back: waiting for %d stable pods to be available (%d available); the canary keeps its %d pods until then",
			replicas, r.stable.Status.AvailableReplicas, canaryLeft)
	case canaryLeft > 0:
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling back: %d stable pods available; scaling the canary down to 0 (%d pods left)",
			r.stable.Status.AvailableReplicas, canaryLeft)
	default:
		r.phase, r.reason = v1alpha1.CanaryRolledBack, v1alpha1.ReasonRolledBack
		r.message = fmt.Sprintf("rolled back: stable %q serves %d pods, the canary none", r.stable.Name, replicas)
		if st.Phase != v1alpha1.CanaryRolledBack {
			r.event(corev1.EventTypeNormal, v1alpha1.EventRolledBack, "%s", r.message)
		}
	}
}

// snapshot decodes the Canary's v1alpha1.AnnotationStableSnapshot; nil when there is none.
func (r *reconciler) snapshot() (*StableSnapshot, error) {
	raw, ok := r.canary.Annotations[v1alpha1.AnnotationStableSnapshot]
	if !ok {
		return nil, nil
	}
	var s StableSnapshot
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, fmt.Errorf("decoding annotation %s: %w", v1alpha1.AnnotationStableSnapshot, err)
	}
	return &s, nil
}

// ensureSnapshot decides to record the stable Deployment in the Canary's
// v1alpha1.AnnotationStableSnapshot before the release begins, unless a snapshot of that
// Deployment is already there.
func (r *reconciler) ensureSnapshot() {
	if s, err := r.snapshot(); err == nil && s != nil && s.Deployment == r.stable.Name {
		return
	}
	raw, _ := json.Marshal(StableSnapshot{ // a pod template always encodes
		Deployment: r.stable.Name,
		Replicas:   replicasOf(r.stable),
		Template:   r.stable.Spec.Template,
	})
	r.newSnapshot = string(raw)
}

// restoreStable decides to put the snapshot's pod template back on the stable Deployment and set
// its replicas, in one JSON patch (a merge patch would merge the old template into the new one
// instead of replacing it).
func (r *reconciler) restoreStable(snap *StableSnapshot, replicas int32) {
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
