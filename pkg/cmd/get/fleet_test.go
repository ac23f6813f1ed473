package get

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

// fleetObjects are UnitedDeployment shop (members only, cmdtest.FleetUnitedDeployment),
// UnitedDeployment mixed (members and a subset in the hub, with its StatefulSet and pods) and
// Canary shop releasing shop cluster by cluster: wave 1 (eu-1) passed, wave 2 (us-1) held by its
// unreachable member.
func fleetObjects() []runtime.Object {
	mixed := cmdtest.FleetUnitedDeployment(t0, true)
	mixed.Name, mixed.UID = "mixed", "uid-mixed"
	s := &appsv1.StatefulSet{ObjectMeta: meta("mixed-zone-a-7hq4m", "uid-mixed-zone-a", 24*time.Hour,
		labels(v1alpha1.LabelUnitedDeploymentName, "mixed", v1alpha1.LabelSubsetName, "zone-a", v1alpha1.LabelRevision, "shop-7c9b4"), mixed, udKind)}
	s.Spec.Replicas = ptr.To[int32](2)
	sel := labels("app", "shop", v1alpha1.LabelUnitedDeploymentName, "mixed", v1alpha1.LabelSubsetName, "zone-a")
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "r-1", UpdateRevision: "r-1"}
	objs := []runtime.Object{cmdtest.FleetUnitedDeployment(t0, false), mixed, s, cmdtest.FleetCanary(t0)}
	for _, name := range []string{"mixed-zone-a-7hq4m-0", "mixed-zone-a-7hq4m-1"} {
		pl := labels("app", "shop", v1alpha1.LabelUnitedDeploymentName, "mixed", v1alpha1.LabelSubsetName, "zone-a", appsv1.ControllerRevisionHashLabelKey, "r-1")
		objs = append(objs, pod(name, pl, s, stsKind, 20*time.Hour, "ready", 0))
	}
	return objs
}

// A UnitedDeployment whose subsets name clusters draws its clusters as the tree's first level,
// from its status only (the plugin talks to the hub, never to members): an unreachable member
// says why and since when; the hub's own subset keeps its workload and pods. A Canary releasing
// it names each step's clusters and the member holding the current step.
func TestGetFleet(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"fleet-ud-tree", []string{"ud/shop"}},
		{"fleet-ud-mixed-tree", []string{"ud/mixed"}},
		{"fleet-canary-tree", []string{"canary/shop"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdGet, fleetObjects(), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
		})
	}
}
