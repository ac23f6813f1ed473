package workload

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Partitionable lists the kinds set-partition acts on.
var Partitionable = []Kind{TApp, StatefulSet, UnitedDeployment}

// partitionPath is where a TApp and a StatefulSet keep their partition.
var partitionPath = map[string][]string{
	TApp.Name:        {"spec", "updateStrategy", "partition"},
	StatefulSet.Name: {"spec", "updateStrategy", "rollingUpdate", "partition"},
}

// PartitionPatch is the merge patch that sets a TApp's or a StatefulSet's partition and nothing
// else. It sets an absolute value, so sending it twice is the same as once.
func PartitionPatch(k Kind, n int32) (Patch, error) {
	path, ok := partitionPath[k.Name]
	if !ok {
		return Patch{}, fmt.Errorf("a %s has no single partition", k.Name)
	}
	return MergePatch(path, n)
}

var partitionNumber = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})$`)

func parsePartition(s string) (int32, bool) {
	if !partitionNumber.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil
}

// SetPartition decides what `set-partition` does: args is N for a TApp or a StatefulSet, and
// SUBSET=N … for a UnitedDeployment. A partition above the replicas it applies to, an unknown
// subset, a StatefulSet using OnDelete, or a non-zero partition on a UnitedDeployment of
// Deployment subsets is a one-line error and changes nothing.
func SetPartition(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	if ref.Kind.Name == UnitedDeployment.Name {
		return setSubsetPartitions(ref, obj, args)
	}
	if len(args) == 0 {
		return Change{}, fmt.Errorf("%s: give the partition N: pods with an ordinal below N keep their current revision", ref)
	}
	if len(args) != 1 || strings.Contains(args[0], "=") {
		return Change{}, fmt.Errorf("%s: give the partition as one number N, not %q", ref, strings.Join(args, " "))
	}
	n, ok := parsePartition(args[0])
	if !ok {
		return Change{}, fmt.Errorf("%s: %q is not a partition: give a non-negative integer", ref, args[0])
	}
	var replicas, current int32
	switch ref.Kind.Name {
	case TApp.Name:
		t, err := AsTApp(obj)
		if err != nil {
			return Change{}, err
		}
		replicas = TAppReplicas(t)
		if p := t.Spec.UpdateStrategy.Partition; p != nil {
			current = *p
		}
	case StatefulSet.Name:
		s, err := AsStatefulSet(obj)
		if err != nil {
			return Change{}, err
		}
		if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
			return Change{}, fmt.Errorf("%s uses the OnDelete update strategy, which has no partition: its pods change only when deleted", ref)
		}
		replicas = 1
		if s.Spec.Replicas != nil {
			replicas = *s.Spec.Replicas
		}
		if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			current = *ru.Partition
		}
	default:
		return Change{}, fmt.Errorf("a %s has no partition", ref.Kind.Name)
	}
	if n > replicas {
		return Change{}, fmt.Errorf("%s: partition %d is above its replicas (%d): use 0 to %d", ref, n, replicas, replicas)
	}
	if n == current {
		return Unchanged(ref, "%s: partition is already %d", ref, n), nil
	}
	p, err := PartitionPatch(ref.Kind, n)
	if err != nil {
		return Change{}, err
	}
	return Change{Ref: ref, Patch: &p, Line: fmt.Sprintf("%s partition set to %d (was %d)", ref, n, current)}, nil
}

func setSubsetPartitions(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	ud, err := AsUnitedDeployment(obj)
	if err != nil {
		return Change{}, err
	}
	if len(args) == 0 {
		return Change{}, fmt.Errorf("%s: give partitions as SUBSET=N …; its subsets are %s", ref, strings.Join(SubsetNames(ud), ", "))
	}
	replicas := map[string]int32{}
	for _, s := range ud.Status.SubsetStatuses {
		replicas[s.Name] = s.Replicas
	}
	current := Partitions(ud)
	want := map[string]int32{}
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			return Change{}, fmt.Errorf("%s: %q is not SUBSET=N; its subsets are %s", ref, a, strings.Join(SubsetNames(ud), ", "))
		}
		if !HasSubset(ud, name) {
			return Change{}, UnknownSubsetError(ref, ud, name)
		}
		if _, dup := want[name]; dup {
			return Change{}, fmt.Errorf("%s: subset %s is given twice", ref, name)
		}
		n, ok := parsePartition(value)
		if !ok {
			return Change{}, fmt.Errorf("%s: %q is not a partition for subset %s: give a non-negative integer", ref, value, name)
		}
		if n > 0 && ud.Spec.Template.DeploymentTemplate != nil {
			return Change{}, fmt.Errorf("%s runs Deployment subsets, which cannot keep pods on an old revision: only partition 0 is allowed (hold the rollout with `kubectl workload pause %s`)", ref, ref)
		}
		// The agent caps a partition at the subset's replicas; refuse what it would ignore. A
		// subset the agent has not provisioned yet (no status) is checked against the
		// UnitedDeployment's replicas only.
		if r, known := replicas[name]; known && n > r {
			return Change{}, fmt.Errorf("%s: partition %d for subset %s is above its replicas (%d): use 0 to %d", ref, n, name, r, r)
		}
		if total := udReplicas(ud.Spec.Replicas); n > total {
			return Change{}, fmt.Errorf("%s: partition %d for subset %s is above the replicas of the whole UnitedDeployment (%d)", ref, n, name, total)
		}
		want[name] = n
	}
	set := map[string]int32{}
	for name, n := range want {
		if current[name] != n {
			set[name] = n
		}
	}
	if len(set) == 0 {
		return Unchanged(ref, "%s: partitions are already %s", ref, assignments(want)), nil
	}
	p, err := PartitionsPatch(set)
	if err != nil {
		return Change{}, err
	}
	var changes []string
	for _, name := range sortedKeys(set) {
		changes = append(changes, fmt.Sprintf("%s=%d (was %d)", name, set[name], current[name]))
	}
	return Change{Ref: ref, Patch: &p, Line: fmt.Sprintf("%s partitions set: %s", ref, strings.Join(changes, ", "))}, nil
}

// assignments renders partitions as "zone-a=2, zone-b=0", sorted by subset.
func assignments(m map[string]int32) string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(out, ", ")
}

func sortedKeys(m map[string]int32) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// udReplicas is a UnitedDeployment's spec.replicas, with the CRD's default of 1.
func udReplicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
