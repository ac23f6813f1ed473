package workload

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestPartitionPatch(t *testing.T) {
	for _, tt := range []struct {
		k    Kind
		want string
	}{
		{TApp, `{"spec":{"updateStrategy":{"partition":3}}}`},
		{StatefulSet, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":3}}}}`},
	} {
		k, want := tt.k, tt.want
		p, err := PartitionPatch(k, 3)
		if err != nil || string(p.Data) != want || p.Type != "application/merge-patch+json" {
			t.Errorf("PartitionPatch(%s) = %s %v, want the merge patch %s", k.Name, p.Data, err, want)
		}
	}
	if _, err := PartitionPatch(Deployment, 1); err == nil {
		t.Error("a Deployment has no partition")
	}
	p, _ := PartitionsPatch(map[string]int32{"b": 1, "a": 0})
	if want := `{"spec":{"updateStrategy":{"manualUpdate":{"partitions":{"a":0,"b":1}}}}}`; string(p.Data) != want {
		t.Errorf("PartitionsPatch = %s, want %s", p.Data, want)
	}
}

func TestSetPartition(t *testing.T) {
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	tapp.Spec.Replicas = ptr.To[int32](4)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}} // replicas defaults to 1
	ud := &v1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "orders"}}
	ud.Spec.Replicas = ptr.To[int32](6)
	ud.Spec.Topology.Subsets = []v1alpha1.Subset{{Name: "a"}, {Name: "b"}}
	ud.Status.SubsetStatuses = []v1alpha1.SubsetStatus{{Name: "a", Replicas: 3}}
	ud.Spec.UpdateStrategy.ManualUpdate = &v1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 1}}
	tests := []struct {
		ref     Ref
		obj     runtime.Object
		args    []string
		patch   string
		wantErr string
	}{
		{Ref{TApp, "web"}, tapp, []string{"4"}, `{"spec":{"updateStrategy":{"partition":4}}}`, ""},
		{Ref{TApp, "web"}, tapp, []string{"0"}, "", ""}, // absent is 0
		{Ref{TApp, "web"}, tapp, []string{"5"}, "", "tapp/web: partition 5 is above its replicas (4): use 0 to 4"},
		{Ref{StatefulSet, "db"}, sts, []string{"1"}, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":1}}}}`, ""},
		{Ref{StatefulSet, "db"}, sts, []string{"2"}, "", "above its replicas (1)"},
		{Ref{UnitedDeployment, "orders"}, ud, []string{"a=1", "b=6"}, `{"spec":{"updateStrategy":{"manualUpdate":{"partitions":{"b":6}}}}}`, ""},
		{Ref{UnitedDeployment, "orders"}, ud, []string{"a=4"}, "", "partition 4 for subset a is above its replicas (3)"},
		{Ref{UnitedDeployment, "orders"}, ud, []string{"b=7"}, "", "above the replicas of the whole UnitedDeployment (6)"},
		{Ref{UnitedDeployment, "orders"}, ud, []string{"c=0"}, "", `ud/orders has no subset "c": its subsets are a, b`},
	}
	for _, tt := range tests {
		obj := toUnstructured(t, tt.obj.DeepCopyObject())
		change, err := SetPartition(tt.ref, obj, tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s %v: got %v, want an error with %q", tt.ref, tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %v: %v", tt.ref, tt.args, err)
			continue
		}
		got := ""
		if change.Patch != nil {
			got = string(change.Patch.Data)
		}
		if got != tt.patch {
			t.Errorf("%s %v: patch %q, want %q", tt.ref, tt.args, got, tt.patch)
		}
	}
}
