// Package partition is the one place that knows where each kind keeps its partition (how many
// pods keep the current revision while the rest are updated) and how it is set: a StatefulSet's
// spec.updateStrategy.rollingUpdate.partition, a TApp's spec.updateStrategy.partition, and a
// UnitedDeployment's spec.updateStrategy.manualUpdate.partitions per subset. The agent (its
// controllers and the Canary's in-place targets) and the plugin (set-partition, promote, status)
// read and write partitions through it.
//
// Every patch is a JSON merge patch (types.MergePatchType) that sets an absolute value and
// nothing else, so sending it twice is the same as once; a merge patch suits both the native
// StatefulSet and our custom resources, which have no strategic merge.
package partition

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// StatefulSet is a StatefulSet's partition: 0 when it has none (no RollingUpdate settings, or
// OnDelete, whose pods change only when deleted).
func StatefulSet(s *appsv1.StatefulSet) int32 {
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

// StatefulSetPatch sets a StatefulSet's partition to n.
func StatefulSetPatch(n int32) []byte {
	return fmt.Appendf(nil, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":%d}}}}`, n)
}

// TApp is a TApp's partition: instances with an id below it keep their template; 0 when unset.
func TApp(t *v1alpha1.TApp) int32 {
	if p := t.Spec.UpdateStrategy.Partition; p != nil {
		return *p
	}
	return 0
}

// TAppPatch sets a TApp's partition to n.
func TAppPatch(n int32) []byte {
	return fmt.Appendf(nil, `{"spec":{"updateStrategy":{"partition":%d}}}`, n)
}

// Subsets is a UnitedDeployment's partitions by subset, as written (nil when none is set). A
// subset absent from it has partition 0.
func Subsets(ud *v1alpha1.UnitedDeployment) map[string]int32 {
	if mu := ud.Spec.UpdateStrategy.ManualUpdate; mu != nil {
		return mu.Partitions
	}
	return nil
}

// Subset is the partition of one subset as written: absent or negative means 0. The
// UnitedDeployment controller caps it at the subset's replicas.
func Subset(ud *v1alpha1.UnitedDeployment, subset string) int32 {
	return max(Subsets(ud)[subset], 0)
}

// SubsetsPatch sets the partitions of the subsets given and leaves the others as they are.
func SubsetsPatch(partitions map[string]int32) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"updateStrategy": map[string]any{
		"manualUpdate": map[string]any{"partitions": partitions}}}})
}

// ClearSubsetsPatch removes every subset's partition (all of them 0).
func ClearSubsetsPatch() []byte {
	return []byte(`{"spec":{"updateStrategy":{"manualUpdate":{"partitions":null}}}}`)
}
