package cmdtest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// FleetUnitedDeployment is UnitedDeployment shop of Namespace over two member clusters
// (docs/fleet.md), as the agent reports it at now: eu-1 reachable and updated, us-1 out of reach
// for five minutes and held at partition 2. With hub, a third subset zone-a runs in the hub.
func FleetUnitedDeployment(now time.Time, hub bool) *v1alpha1.UnitedDeployment {
	u := &v1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: Namespace, UID: "uid-shop",
		Generation: 1, CreationTimestamp: metav1.NewTime(now.Add(-24 * time.Hour))}}
	u.Spec.Replicas = ptr.To[int32](4)
	u.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}}
	u.Spec.Template.StatefulSetTemplate = &v1alpha1.StatefulSetTemplateSpec{}
	u.Spec.UpdateStrategy.ManualUpdate = &v1alpha1.ManualUpdate{Partitions: map[string]int32{"us-1": 2}}
	u.Spec.Topology.Subsets = []v1alpha1.Subset{
		{Name: "eu-1", ClusterProfileRef: &v1alpha1.ClusterProfileReference{Namespace: "fleet-system", Name: "eu-1"}},
		{Name: "us-1", ClusterProfileRef: &v1alpha1.ClusterProfileReference{Namespace: "fleet-system", Name: "us-1"}}}
	u.Status = v1alpha1.UnitedDeploymentStatus{ObservedGeneration: 1, Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 2, UpdatedReadyReplicas: 2,
		CurrentRevision: "shop-5d8f7", UpdatedRevision: "shop-7c9b4",
		SubsetStatuses: []v1alpha1.SubsetStatus{
			{Name: "eu-1", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, Cluster: &v1alpha1.SubsetClusterStatus{
				ClusterProfile: "fleet-system/eu-1", Reachable: true, LastSeenTime: ptr.To(metav1.NewTime(now.Add(-20 * time.Second)))}},
			{Name: "us-1", Replicas: 2, ReadyReplicas: 2, Partition: 2, Cluster: &v1alpha1.SubsetClusterStatus{
				// Worded as the agent words it (pkg/controller/uniteddeployment, observeMember).
				ClusterProfile: "fleet-system/us-1", Message: "cluster fleet-system/us-1 is unreachable: ClusterProfile condition ControlPlaneHealthy is False",
				LastSeenTime: ptr.To(metav1.NewTime(now.Add(-5 * time.Minute)))}}}}
	if hub {
		u.Spec.Replicas = ptr.To[int32](6)
		u.Spec.Topology.Subsets = append(u.Spec.Topology.Subsets, v1alpha1.Subset{Name: "zone-a"})
		u.Status.Replicas, u.Status.ReadyReplicas, u.Status.UpdatedReplicas, u.Status.UpdatedReadyReplicas = 6, 6, 4, 4
		u.Status.SubsetStatuses = append(u.Status.SubsetStatuses, v1alpha1.SubsetStatus{Name: "zone-a", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2})
	}
	return u
}

// FleetReachable makes every member of u reachable and seen 20 seconds before now.
func FleetReachable(u *v1alpha1.UnitedDeployment, now time.Time) {
	for i := range u.Status.SubsetStatuses {
		if c := u.Status.SubsetStatuses[i].Cluster; c != nil {
			c.Reachable, c.Message, c.LastSeenTime = true, "", ptr.To(metav1.NewTime(now.Add(-20*time.Second)))
		}
	}
}

// FleetCanary is Canary shop of Namespace releasing UnitedDeployment shop cluster by cluster
// (eu-1, then us-1), at now: wave 1 passed after its 10-minute pause, wave 2 started 6 minutes
// ago.
func FleetCanary(now time.Time) *v1alpha1.Canary {
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: Namespace, UID: "uid-canary-shop",
		Generation: 1, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	c.Spec.Replicas = 4
	c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "UnitedDeployment", Name: "shop"}
	c.Spec.Steps = []v1alpha1.CanaryStep{
		{Subsets: []string{"eu-1"}, Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: 10 * time.Minute}}},
		{Subsets: []string{"us-1"}}}
	c.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryProgressing, CurrentBatch: 2,
		CanaryReplicas: 2, CanaryAvailable: 2, StableReplicas: 2, StableAvailable: 2,
		Batches: []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 2, State: v1alpha1.BatchCompleted, StartTime: ptr.To(metav1.NewTime(now.Add(-40 * time.Minute)))},
			{Index: 2, CanaryReplicas: 4, State: v1alpha1.BatchUpgrading, StartTime: ptr.To(metav1.NewTime(now.Add(-6 * time.Minute)))}},
		Target: &v1alpha1.CanaryTargetStatus{StableRevision: "shop-5d8f7", UpdateRevision: "shop-7c9b4", Partition: 2, UpdatedReplicas: 2, AvailableReplicas: 4}}
	return c
}
