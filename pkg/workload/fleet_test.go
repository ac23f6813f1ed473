package workload

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// fleetOfThree is a UnitedDeployment over members eu-1 (subset eu-west) and us-1 and the hub's
// own zone-a; us-1 is out of reach.
func fleetOfThree() *v1alpha1.UnitedDeployment {
	ref := func(name string) *v1alpha1.ClusterProfileReference {
		return &v1alpha1.ClusterProfileReference{Namespace: "fleet-system", Name: name}
	}
	ud := &v1alpha1.UnitedDeployment{}
	ud.Spec.Topology.Subsets = []v1alpha1.Subset{{Name: "eu-west", ClusterProfileRef: ref("eu-1")}, {Name: "us-1", ClusterProfileRef: ref("us-1")}, {Name: "zone-a"}}
	ud.Status.SubsetStatuses = []v1alpha1.SubsetStatus{
		{Name: "eu-west", Cluster: &v1alpha1.SubsetClusterStatus{ClusterProfile: "fleet-system/eu-1", Reachable: true}},
		{Name: "us-1", Cluster: &v1alpha1.SubsetClusterStatus{ClusterProfile: "fleet-system/us-1", Message: "connection refused",
			LastSeenTime: ptr.To(metav1.NewTime(Now().Add(-2 * time.Minute)))}}}
	return ud
}

// The step the agent adds after a last step that leaves subsets out is the wave of the subsets
// no step names; a step of replicas has no wave.
func TestWaveSubsets(t *testing.T) {
	ud := fleetOfThree()
	c := &v1alpha1.Canary{}
	c.Spec.Steps = []v1alpha1.CanaryStep{{Subsets: []string{"eu-west"}}}
	for k, want := range map[int32][]string{0: nil, 1: {"eu-west"}, 2: {"us-1", "zone-a"}} {
		if got := waveSubsets(c, ud, k); !slices.Equal(got, want) {
			t.Errorf("wave %d = %v, want %v", k, got, want)
		}
	}
	c.Spec.Steps = []v1alpha1.CanaryStep{{Subsets: []string{"eu-west"}}, {Replicas: intstr.FromInt32(6)}}
	if got := waveSubsets(c, ud, 3); got != nil {
		t.Errorf("the step after a step of replicas has wave %v, want none", got)
	}
	f := fleetOf(ud)
	if got, want := f.waveClusters([]string{"eu-west", "us-1", "zone-a"}), "eu-1 (subset eu-west), us-1, zone-a (hub)"; got != want {
		t.Errorf("waveClusters = %q, want %q", got, want)
	}
}

// A member out of reach in the current wave or an earlier one holds the step; one of a later wave
// does not.
func TestHeldBy(t *testing.T) {
	f := fleetOf(fleetOfThree())
	c := &v1alpha1.Canary{}
	c.Spec.Steps = []v1alpha1.CanaryStep{{Subsets: []string{"eu-west"}}, {Subsets: []string{"us-1"}}}
	if got := f.heldBy(c, 1); len(got) != 0 {
		t.Errorf("step 1 held by %v, want nothing (us-1 is wave 2)", got)
	}
	got := f.heldBy(c, 2)
	if len(got) != 1 || got[0].name != "cluster us-1" || got[0].verdict != "Unreachable" || got[0].info != "connection refused (last seen 2m ago); the step waits for it" {
		t.Errorf("step 2 held by %+v, want cluster us-1 with its message", got)
	}
	c.Status.Phase, c.Status.CurrentBatch = v1alpha1.CanaryProgressing, 2
	if got, want := fleetHold(c, f), "; step 2 waits for cluster us-1 (unreachable)"; got != want {
		t.Errorf("fleetHold = %q, want %q", got, want)
	}
	c.Spec.Rollback = true
	if got := fleetHold(c, f); got != "" {
		t.Errorf("a release rolling back is held by %q, want nothing", got)
	}
}

// CLUSTERS counts the members, not the hub, and only for a UnitedDeployment with members.
func TestClustersOf(t *testing.T) {
	toU := func(obj interface{}) *unstructured.Unstructured {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: m}
	}
	if got := ClustersOf(UnitedDeployment, toU(fleetOfThree())); got != "1/2" {
		t.Errorf("CLUSTERS = %q, want 1/2", got)
	}
	if got := ClustersOf(UnitedDeployment, toU(&v1alpha1.UnitedDeployment{})); got != "" {
		t.Errorf("CLUSTERS of a UnitedDeployment without members = %q, want empty", got)
	}
	if got := ClustersOf(Canary, toU(&v1alpha1.Canary{})); got != "" {
		t.Errorf("CLUSTERS of a Canary = %q, want empty", got)
	}
}

// The step the agent adds after the last step naming subsets is "every subset left": without
// the UnitedDeployment (not read, or not there) it names none — and the status of such a
// Canary, read without its UnitedDeployment, is drawn (it crashed the plugin once).
func TestWaveSubsetsWithoutTheUnitedDeployment(t *testing.T) {
	c := &v1alpha1.Canary{}
	c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "UnitedDeployment", Name: "pay"}
	c.Spec.Steps = []v1alpha1.CanaryStep{{Subsets: []string{"zone-a"}}}
	if got := waveSubsets(c, nil, 2); got != nil {
		t.Errorf("wave 2 without the UnitedDeployment = %v, want none", got)
	}
	c.Status.Batches = []v1alpha1.CanaryBatchStatus{{Index: 1, State: v1alpha1.BatchCompleted}, {Index: 2, State: v1alpha1.BatchUpgrading}}
	c.Status.CurrentBatch = 2
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	st, err := canaryStatus(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Progress) != 2 || !strings.Contains(st.Progress[1], "step 2/2") {
		t.Errorf("progress = %q, want both steps, the second current", st.Progress)
	}
}
