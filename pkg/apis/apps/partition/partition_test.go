package partition

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestStatefulSet(t *testing.T) {
	var s appsv1.StatefulSet
	if got := StatefulSet(&s); got != 0 {
		t.Errorf("no rolling update: %d, want 0", got)
	}
	s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
	if got := StatefulSet(&s); got != 0 {
		t.Errorf("no partition: %d, want 0", got)
	}
	s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](3)
	if got := StatefulSet(&s); got != 3 {
		t.Errorf("partition 3 read as %d", got)
	}
	if got, want := string(StatefulSetPatch(2)), `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}`; got != want {
		t.Errorf("StatefulSetPatch = %s, want %s", got, want)
	}
	roundTrip(t, StatefulSetPatch(5), &s, func() int32 { return StatefulSet(&s) }, 5)
}

func TestTApp(t *testing.T) {
	var tapp v1alpha1.TApp
	if got := TApp(&tapp); got != 0 {
		t.Errorf("unset: %d, want 0", got)
	}
	tapp.Spec.UpdateStrategy.Partition = ptr.To[int32](4)
	if got := TApp(&tapp); got != 4 {
		t.Errorf("partition 4 read as %d", got)
	}
	if got, want := string(TAppPatch(1)), `{"spec":{"updateStrategy":{"partition":1}}}`; got != want {
		t.Errorf("TAppPatch = %s, want %s", got, want)
	}
	roundTrip(t, TAppPatch(7), &tapp, func() int32 { return TApp(&tapp) }, 7)
}

func TestSubsets(t *testing.T) {
	var ud v1alpha1.UnitedDeployment
	if Subsets(&ud) != nil || Subset(&ud, "a") != 0 {
		t.Error("a UnitedDeployment without manualUpdate has partitions")
	}
	ud.Spec.UpdateStrategy.ManualUpdate = &v1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 2, "b": -1}}
	if Subset(&ud, "a") != 2 || Subset(&ud, "b") != 0 || Subset(&ud, "c") != 0 {
		t.Errorf("partitions a, b, c read as %d, %d, %d; want 2, 0, 0", Subset(&ud, "a"), Subset(&ud, "b"), Subset(&ud, "c"))
	}
	p, err := SubsetsPatch(map[string]int32{"b": 1, "a": 0})
	if want := `{"spec":{"updateStrategy":{"manualUpdate":{"partitions":{"a":0,"b":1}}}}}`; err != nil || string(p) != want {
		t.Errorf("SubsetsPatch = %s %v, want %s", p, err, want)
	}
	roundTrip(t, p, &ud, func() int32 { return Subset(&ud, "b") }, 1)
	if got, want := string(ClearSubsetsPatch()), `{"spec":{"updateStrategy":{"manualUpdate":{"partitions":null}}}}`; got != want {
		t.Errorf("ClearSubsetsPatch = %s, want %s", got, want)
	}
}

// roundTrip decodes a patch into a fresh object of obj's type (merge patches of one field are
// the object's own JSON shape) and checks that read finds n there.
func roundTrip(t *testing.T, patch []byte, obj any, read func() int32, n int32) {
	t.Helper()
	if err := json.Unmarshal(patch, obj); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	if got := read(); got != n {
		t.Errorf("after patch %s the partition reads %d, want %d", patch, got, n)
	}
}
