package uniteddeployment

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// computeStatus is the status after a sync: pod counts and subset statuses from the
// observation, revisions and conditions from what the sync did. What the sync did not get to
// (revisions when blocked, SubsetProvisioned and SubsetUpdated before provisioning) keeps its
// last value.
func computeStatus(obs *observation, r *result) *appsv1alpha1.UnitedDeploymentStatus {
	ud := obs.ud
	status := obs.status.DeepCopy()
	status.ObservedGeneration = ud.Generation
	status.LabelSelector = labelSelectorString(ud)
	if r.collisionCount != 0 || status.CollisionCount != nil {
		cc := r.collisionCount
		status.CollisionCount = &cc
	}
	if r.updated != "" {
		status.UpdatedRevision, status.CurrentRevision = r.updated, r.current
	}
	pods := countAll(obs, status.UpdatedRevision)
	if rolledOut(ud, r, pods) {
		status.CurrentRevision = status.UpdatedRevision
	}
	fillCounts(ud, status, pods, r.alloc)
	fillClusters(obs, status)
	if r.subsets != nil {
		setConditions(ud, status, r)
	}
	failure := failureCondition(r.failures)
	failure.ObservedGeneration = ud.Generation
	meta.SetStatusCondition(&status.Conditions, failure)
	return status
}

// rolledOut reports whether the updated revision becomes current: every pod runs it and is
// ready, and nothing of an older template is left.
func rolledOut(ud *appsv1alpha1.UnitedDeployment, r *result, pods *observedPods) bool {
	total := appsv1alpha1.ReplicasOrDefault(ud.Spec.Replicas)
	return r.subsets != nil && r.current != r.updated &&
		len(r.notUpdated) == 0 && len(r.subsets.waiting) == 0 && !r.provisionFailed && len(r.subsets.creates) == 0 &&
		pods.total.replicas == total && pods.total.updated == total && pods.total.updatedReady == total
}

// labelSelectorString is the pods' selector for the scale subresource.
func labelSelectorString(ud *appsv1alpha1.UnitedDeployment) string {
	if ud.Spec.Selector == nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(ud.Spec.Selector)
	if err != nil {
		return ""
	}
	return sel.String()
}

// fillCounts writes the totals and the subset statuses; alloc holds each subset's replicas
// (nil: 0).
func fillCounts(ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus, pods *observedPods, alloc map[string]int32) {
	status.Replicas = pods.total.replicas
	status.ReadyReplicas = pods.total.ready
	status.UpdatedReplicas = pods.total.updated
	status.UpdatedReadyReplicas = pods.total.updatedReady
	status.SubsetStatuses = nil
	for i := range ud.Spec.Topology.Subsets {
		name := ud.Spec.Topology.Subsets[i].Name
		counts := pods.subset(name)
		status.SubsetStatuses = append(status.SubsetStatuses, appsv1alpha1.SubsetStatus{
			Name:            name,
			Replicas:        alloc[name],
			ReadyReplicas:   counts.ready,
			UpdatedReplicas: counts.updated,
			Partition:       partitionOf(ud, name, alloc[name]),
		})
	}
}

// fillClusters writes each cluster subset's member state. The subset of a member that cannot
// be read this sync keeps the pod counts last seen, which stay in the totals, except
// updatedReadyReplicas: which of its pods are both updated and ready now is unknown, so none
// counts (a rollout is never complete on counts nobody read; docs/fleet.md, "Status").
func fillClusters(obs *observation, status *appsv1alpha1.UnitedDeploymentStatus) {
	for i := range status.SubsetStatuses {
		st := &status.SubsetStatuses[i]
		spec := &obs.ud.Spec.Topology.Subsets[i]
		cluster := clusterOf(spec)
		if cluster == "" {
			continue
		}
		prev := previousSubset(obs.status, st.Name)
		ms := obs.members[cluster]
		cs := &appsv1alpha1.SubsetClusterStatus{ClusterProfile: cluster, Reachable: ms != nil && ms.reason != appsv1alpha1.ReasonClusterUnreachable}
		if ms != nil && ms.reason != "" {
			cs.Message = ms.message
		}
		if prev != nil && prev.Cluster != nil && prev.Cluster.ClusterProfile == cluster {
			cs.LastSeenTime = prev.Cluster.LastSeenTime
		}
		if !cs.Reachable || ms.waiting {
			if prev != nil {
				st.ReadyReplicas, st.UpdatedReplicas = prev.ReadyReplicas, prev.UpdatedReplicas
				status.ReadyReplicas += prev.ReadyReplicas
				status.UpdatedReplicas += prev.UpdatedReplicas
				status.Replicas += prev.Replicas
			}
		} else if prev == nil || prev.Cluster == nil || !prev.Cluster.Reachable || cs.LastSeenTime == nil ||
			prev.ReadyReplicas != st.ReadyReplicas || prev.UpdatedReplicas != st.UpdatedReplicas {
			// Seen again, or seen to change: a new time only then, so that a sync that saw
			// nothing new writes no status.
			now := obs.now
			cs.LastSeenTime = &now
		}
		st.Cluster = cs
	}
}

func previousSubset(status *appsv1alpha1.UnitedDeploymentStatus, name string) *appsv1alpha1.SubsetStatus {
	for i := range status.SubsetStatuses {
		if status.SubsetStatuses[i].Name == name {
			return &status.SubsetStatuses[i]
		}
	}
	return nil
}

// setCondition sets a condition, stamped with the generation it describes.
func setCondition(ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus, t string, s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: ud.Generation,
	})
}

// setConditions sets SubsetProvisioned and SubsetUpdated after a sync that got as far as the
// subset workloads.
func setConditions(ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus, r *result) {
	kind := r.subsets.kind.Kind()
	switch {
	case r.provisionFailed:
		var msgs []string
		for _, f := range r.failures {
			if f.reason == appsv1alpha1.ReasonFailedCreate || f.reason == appsv1alpha1.ReasonFailedDelete {
				msgs = append(msgs, f.message)
			}
		}
		setCondition(ud, status, appsv1alpha1.SubsetProvisioned, metav1.ConditionFalse, appsv1alpha1.ReasonProvisionFailed, strings.Join(msgs, "; "))
	case len(r.subsets.waiting) > 0:
		setCondition(ud, status, appsv1alpha1.SubsetProvisioned, metav1.ConditionFalse, appsv1alpha1.ReasonReplacing,
			fmt.Sprintf("keeping %s until the subset's new %s is ready", strings.Join(r.subsets.waiting, ", "), kind))
	default:
		setCondition(ud, status, appsv1alpha1.SubsetProvisioned, metav1.ConditionTrue, appsv1alpha1.ReasonProvisioned,
			fmt.Sprintf("every subset has one %s", kind))
	}

	if len(r.notUpdated) == 0 {
		setCondition(ud, status, appsv1alpha1.SubsetUpdated, metav1.ConditionTrue, appsv1alpha1.ReasonUpdated,
			fmt.Sprintf("every subset's %s carries revision %s", kind, status.UpdatedRevision))
		return
	}
	reasons := make([]string, 0, len(r.notUpdated))
	for reason := range r.notUpdated {
		reasons = append(reasons, reason)
	}
	sort.Strings(reasons)
	var msgs []string
	for _, reason := range reasons {
		var why string
		switch reason {
		case appsv1alpha1.ReasonPaused:
			why = "updateStrategy.paused is set"
		case appsv1alpha1.ReasonPartitionUnsupported:
			why = "a Deployment cannot honour a non-zero partition"
		case appsv1alpha1.ReasonClusterUnreachable:
			why = "their member cluster is unreachable"
		case appsv1alpha1.ReasonClusterUnsupported:
			why = "their member cluster cannot run a " + kind
		case appsv1alpha1.ReasonNotReleased:
			why = "their partition keeps every pod on the old revision, and a member is written only once a release reaches it"
		case appsv1alpha1.ReasonProvisionFailed:
			msgs = append(msgs, fmt.Sprintf("subsets %s have no %s: creating it failed", strings.Join(r.notUpdated[reason], ", "), kind))
			continue
		default:
			why = "the update failed"
		}
		msgs = append(msgs, fmt.Sprintf("subsets %s keep their template: %s", strings.Join(r.notUpdated[reason], ", "), why))
	}
	setCondition(ud, status, appsv1alpha1.SubsetUpdated, metav1.ConditionFalse, reasons[0], strings.Join(msgs, "; "))
}

// failureCondition is SubsetFailure: True with the first failure's reason and every failure's
// message, else False NoFailure.
func failureCondition(failures []failure) metav1.Condition {
	if len(failures) == 0 {
		return metav1.Condition{Type: appsv1alpha1.SubsetFailure, Status: metav1.ConditionFalse, Reason: appsv1alpha1.ReasonNoFailure}
	}
	msgs := make([]string, 0, len(failures))
	for _, f := range failures {
		msgs = append(msgs, f.message)
	}
	return metav1.Condition{Type: appsv1alpha1.SubsetFailure, Status: metav1.ConditionTrue, Reason: failures[0].reason, Message: strings.Join(msgs, "; ")}
}

// userFailures are the failures that are the user's to fix: a Warning Event reports them when
// they first appear (a refused API write has its own Event when it happens).
var userFailures = map[string]bool{
	appsv1alpha1.ReasonInvalidReplicas:      true,
	appsv1alpha1.ReasonPartitionUnsupported: true,
	appsv1alpha1.ReasonNoTemplate:           true,
}

// report emits the Events of a status change: RolloutComplete when the updated revision became
// current, and a Warning per failure of the user's when SubsetFailure changed.
func (c *Controller) report(obs *observation, r *result, status *appsv1alpha1.UnitedDeploymentStatus) {
	ud := obs.ud
	if r.updated != "" && r.current != r.updated && status.CurrentRevision == r.updated {
		c.Recorder.Eventf(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonRolloutComplete, "Every replica runs revision %s and is ready; it is now the current revision", r.updated)
	}
	now := meta.FindStatusCondition(status.Conditions, appsv1alpha1.SubsetFailure)
	old := meta.FindStatusCondition(obs.status.Conditions, appsv1alpha1.SubsetFailure)
	if now.Status != metav1.ConditionTrue || (old != nil && old.Status == now.Status && old.Reason == now.Reason && old.Message == now.Message) {
		return
	}
	for _, f := range r.failures {
		if userFailures[f.reason] {
			c.Recorder.Event(ud, corev1.EventTypeWarning, f.reason, f.message)
		}
	}
}

// writeStatus writes status through the status subresource when it differs from the status the
// controller knows (obs.status), on the version it knows, and remembers the write.
func (c *Controller) writeStatus(ctx context.Context, key string, obs *observation, status *appsv1alpha1.UnitedDeploymentStatus) error {
	if apiequality.Semantic.DeepEqual(obs.status, status) {
		return nil
	}
	u := obs.ud.DeepCopy()
	u.ResourceVersion = obs.statusVersion
	u.Status = *status
	out, err := c.statusClient.AppsV1alpha1().UnitedDeployments(u.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		c.statuses.Forget(key)
		return err
	}
	c.statuses.Wrote(key, obs.ud.ResourceVersion, out.ResourceVersion, out.Status.DeepCopy())
	return nil
}
