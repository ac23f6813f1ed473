package uniteddeployment

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
)

// A cluster dropped from the spec is looked at while the status still records it (the sync
// deletes its workloads there); the status stops recording it with that sync. A member
// unreachable then would keep its workload for good, so the cluster is first written into
// AnnotationRetiredClusters, which clusterRefs reads too, and cleared from there only once the
// member is seen without any of ud's workloads (docs/architecture.md, "Fleet: member clusters").

// retiredClusters is ud's AnnotationRetiredClusters.
func retiredClusters(ud *appsv1alpha1.UnitedDeployment) []string {
	v := ud.Annotations[appsv1alpha1.AnnotationRetiredClusters]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// syncRetired writes AnnotationRetiredClusters when the set of clusters it should list
// changed: every cluster ud records (status, annotation) but its subsets no longer name, until
// its member is seen holding none of ud's workloads, or its ClusterProfile is gone (the cluster
// has left the fleet: its workloads are left there, with a Warning Event). It reports whether
// it wrote: the write's event brings ud back, and nothing else is written this sync, so that
// the status never stops recording a cluster before the annotation does.
func (c *Controller) syncRetired(ctx context.Context, obs *observation) (bool, error) {
	ud := obs.ud
	if !c.fleet.HasAccess() {
		return false, nil
	}
	named := map[string]bool{}
	for i := range ud.Spec.Topology.Subsets {
		named[clusterOf(&ud.Spec.Topology.Subsets[i])] = true
	}
	var keep []string
	for _, ref := range clusterRefs(ud) {
		key := fleet.Key(ref)
		if named[key] {
			continue
		}
		if c.fleet.Profile(ref) == nil {
			c.Recorder.Eventf(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete,
				"ClusterProfile %s is gone: the subset workloads in that cluster, if any, are left there", key)
			continue
		}
		if !obs.memberEmpty(key) {
			keep = append(keep, key)
		}
	}
	want := strings.Join(keep, ",")
	if want == ud.Annotations[appsv1alpha1.AnnotationRetiredClusters] {
		return false, nil
	}
	var value any
	if want != "" {
		value = want
	}
	klog.FromContext(ctx).V(2).Info("Recording the clusters no subset names until their workloads are gone", "clusters", want)
	return true, c.patchMetadata(ctx, ud, map[string]any{"annotations": map[string]any{appsv1alpha1.AnnotationRetiredClusters: value}})
}

// memberEmpty reports whether the member cluster was read this sync (reachable, caches
// synced) and holds none of ud's workloads, of any kind.
func (o *observation) memberEmpty(cluster string) bool {
	ms := o.members[cluster]
	if ms == nil || ms.waiting || ms.reason == appsv1alpha1.ReasonClusterUnreachable {
		return false
	}
	for _, l := range o.own {
		for _, s := range l {
			if s.Cluster == cluster {
				return false
			}
		}
	}
	for _, w := range o.others {
		if w.subset.Cluster == cluster {
			return false
		}
	}
	return true
}
