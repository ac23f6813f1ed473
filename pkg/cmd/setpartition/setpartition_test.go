package setpartition

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace}
}

func ud(name string, deployments bool) *v1alpha1.UnitedDeployment {
	u := &v1alpha1.UnitedDeployment{ObjectMeta: meta(name)}
	u.Spec.Replicas = ptr.To[int32](10)
	if deployments {
		u.Spec.Template.DeploymentTemplate = &v1alpha1.DeploymentTemplateSpec{}
	} else {
		u.Spec.Template.StatefulSetTemplate = &v1alpha1.StatefulSetTemplateSpec{}
	}
	for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
		u.Spec.Topology.Subsets = append(u.Spec.Topology.Subsets, v1alpha1.Subset{Name: z})
	}
	u.Status.SubsetStatuses = []v1alpha1.SubsetStatus{{Name: "zone-a", Replicas: 3}, {Name: "zone-b", Replicas: 3}, {Name: "zone-c", Replicas: 4}}
	return u
}

// objects: a TApp of 5 at partition 2, a StatefulSet of 3 (RollingUpdate, no partition), one
// using OnDelete, a UnitedDeployment of StatefulSet subsets with partitions {zone-a: 3}, one of
// Deployment subsets, one of subsets not provisioned yet, and a Canary.
func objects() []runtime.Object {
	tapp := &v1alpha1.TApp{ObjectMeta: meta("web")}
	tapp.Spec.Replicas = ptr.To[int32](5)
	tapp.Spec.UpdateStrategy.Partition = ptr.To[int32](2)
	sts := &appsv1.StatefulSet{ObjectMeta: meta("db")}
	sts.Spec.Replicas = ptr.To[int32](3)
	sts.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	onDelete := &appsv1.StatefulSet{ObjectMeta: meta("legacy")}
	onDelete.Spec.Replicas = ptr.To[int32](3)
	onDelete.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	orders := ud("orders", false)
	orders.Spec.UpdateStrategy.ManualUpdate = &v1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-a": 3}}
	fresh := ud("fresh", false)
	fresh.Status = v1alpha1.UnitedDeploymentStatus{}
	canary := &v1alpha1.Canary{ObjectMeta: meta("checkout")}
	held := sts.DeepCopy()
	held.Name = "ledger"
	ledger := &v1alpha1.Canary{ObjectMeta: meta("ledger")}
	ledger.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "StatefulSet", Name: "ledger"}
	arena := tapp.DeepCopy()
	arena.Name = "arena"
	arenaCanary := &v1alpha1.Canary{ObjectMeta: meta("arena")}
	arenaCanary.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "TApp", Name: "arena"}
	return []runtime.Object{tapp, sts, onDelete, orders, ud("front", true), fresh, canary, held, ledger, arena, arenaCanary}
}

func TestSetPartition(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		unchanged bool // succeeds without changing anything
	}{
		{"tapp", []string{"tapp/web", "4"}, false},
		{"tapp-type-name-form", []string{"tapp", "web", "0"}, false},
		{"tapp-all-replicas", []string{"tapp/web", "5"}, false},
		{"tapp-already", []string{"tapp/web", "2"}, true},
		{"statefulset", []string{"sts/db", "2"}, false},
		{"statefulset-already-zero", []string{"statefulset/db", "0"}, true},
		{"ud-one-subset", []string{"ud/orders", "zone-b=2"}, false},
		{"ud-several-subsets", []string{"ud/orders", "zone-a=0", "zone-c=4", "zone-b=3"}, false},
		{"ud-only-changed-subsets-sent", []string{"ud/orders", "zone-a=3", "zone-b=1"}, false},
		{"ud-already", []string{"ud/orders", "zone-a=3", "zone-b=0"}, true},
		{"ud-deployment-subsets-zero", []string{"ud/front", "zone-a=0"}, true},
		{"ud-not-provisioned", []string{"ud/fresh", "zone-a=7"}, false},
		{"dry-run-client", []string{"ud/orders", "zone-b=2", "--dry-run=client"}, true},
		{"dry-run-server", []string{"tapp/web", "1", "--dry-run=server"}, false},
		{"error-tapp-above-replicas", []string{"tapp/web", "6"}, false},
		{"error-statefulset-above-replicas", []string{"sts/db", "4"}, false},
		{"error-statefulset-on-delete", []string{"sts/legacy", "1"}, false},
		{"error-tapp-not-a-number", []string{"tapp/web", "two"}, false},
		{"error-tapp-negative", []string{"tapp/web", "--", "-1"}, false},
		{"error-tapp-no-number", []string{"tapp/web"}, false},
		{"error-tapp-two-numbers", []string{"tapp/web", "1", "2"}, false},
		{"error-tapp-subset-form", []string{"tapp/web", "zone-a=1"}, false},
		{"error-ud-unknown-subset", []string{"ud/orders", "zone-b=1", "zone-x=1"}, false},
		{"error-ud-above-subset-replicas", []string{"ud/orders", "zone-a=0", "zone-b=4"}, false},
		{"error-ud-not-provisioned-above-replicas", []string{"ud/fresh", "zone-a=11"}, false},
		{"error-ud-deployment-subsets", []string{"ud/front", "zone-a=1"}, false},
		{"error-ud-bare-number", []string{"ud/orders", "2"}, false},
		{"error-ud-bad-number", []string{"ud/orders", "zone-a=x"}, false},
		{"error-ud-subset-twice", []string{"ud/orders", "zone-a=1", "zone-a=2"}, false},
		{"error-ud-nothing", []string{"ud/orders"}, false},
		{"error-canary", []string{"canary/checkout", "1"}, false},
		{"error-deployment", []string{"deploy/front", "1"}, false},
		{"error-missing", []string{"sts/nope", "1"}, false},
		{"error-statefulset-released-by-canary", []string{"sts/ledger", "0"}, false},
		{"error-tapp-released-by-canary", []string{"tapp/arena", "0"}, false},
		{"error-no-args", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdSetPartition, objects(), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			if res.Code != 0 || tt.unchanged {
				cmdtest.AssertUnchanged(t, res, objects())
			}
		})
	}
}

// The stored partitions are really changed, and the others kept.
func TestStoredPartitions(t *testing.T) {
	res := cmdtest.Run(t, NewCmdSetPartition, objects(), "ud/orders", "zone-b=2")
	obj := res.Stored(t, workload.UnitedDeployment.Resource, "orders")
	u, err := workload.AsUnitedDeployment(obj)
	if err != nil {
		t.Fatal(err)
	}
	if p := u.Spec.UpdateStrategy.ManualUpdate.Partitions; len(p) != 2 || p["zone-a"] != 3 || p["zone-b"] != 2 {
		t.Errorf("stored partitions %v, want zone-a=3 kept and zone-b=2", p)
	}

	res = cmdtest.Run(t, NewCmdSetPartition, objects(), "sts/db", "2")
	obj = res.Stored(t, workload.StatefulSet.Resource, "db")
	s, err := workload.AsStatefulSet(obj)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || *s.Spec.UpdateStrategy.RollingUpdate.Partition != 2 || *s.Spec.Replicas != 3 {
		t.Errorf("stored update strategy %+v", s.Spec.UpdateStrategy)
	}
}
