package workload

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Partitionable lists the kinds set-partition acts on (the Partitioners), in the order its
// messages name them; TestCapabilityLists checks it holds every Partitioner.
var Partitionable = []Kind{TApp, StatefulSet, UnitedDeployment}

// singlePartitioner is a kind with one partition (a TApp, a StatefulSet).
type singlePartitioner interface {
	// partitionPatch is the merge patch that sets the partition to n (pkg/apis/apps/partition).
	partitionPatch(n int32) []byte
}

// PartitionPatch is the merge patch that sets a TApp's or a StatefulSet's partition and nothing
// else. It sets an absolute value, so sending it twice is the same as once.
func PartitionPatch(k Kind, n int32) (Patch, error) {
	s, ok := k.helper.(singlePartitioner)
	if !ok {
		return Patch{}, fmt.Errorf("a %s has no single partition", k.Name)
	}
	return Patch{Type: types.MergePatchType, Data: s.partitionPatch(n)}, nil
}

var partitionNumber = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})$`)

func parsePartition(s string) (int32, bool) {
	if !partitionNumber.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil
}

// SetPartition decides what `set-partition` does (the kind's Partitioner): args is N for a TApp
// or a StatefulSet, and SUBSET=N … for a UnitedDeployment. A partition above the replicas it
// applies to, an unknown subset, a StatefulSet using OnDelete, or a non-zero partition on a
// UnitedDeployment of Deployment subsets is a one-line error and changes nothing.
func SetPartition(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	p, err := capability[Partitioner](ref, "has no partition")
	if err != nil {
		return Change{}, err
	}
	return p.SetPartition(ref, obj, args)
}

// parseSinglePartition reads the N of a kind with one partition.
func parseSinglePartition(ref Ref, args []string) (int32, error) {
	if len(args) == 0 {
		return 0, fmt.Errorf("%s: give the partition N: pods with an ordinal below N keep their current revision", ref)
	}
	if len(args) != 1 || strings.Contains(args[0], "=") {
		return 0, fmt.Errorf("%s: give the partition as one number N, not %q", ref, strings.Join(args, " "))
	}
	n, ok := parsePartition(args[0])
	if !ok {
		return 0, fmt.Errorf("%s: %q is not a partition: give a non-negative integer", ref, args[0])
	}
	return n, nil
}

// singlePartitionChange sets the one partition of k from current to n, at most replicas.
func singlePartitionChange(ref Ref, k singlePartitioner, n, replicas, current int32) (Change, error) {
	if n > replicas {
		return Change{}, fmt.Errorf("%s: partition %d is above its replicas (%d): use 0 to %d", ref, n, replicas, replicas)
	}
	if n == current {
		return Unchanged(ref, "%s: partition is already %d", ref, n), nil
	}
	p := Patch{Type: types.MergePatchType, Data: k.partitionPatch(n)}
	return Change{Ref: ref, Patch: &p, Line: fmt.Sprintf("%s partition set to %d (was %d)", ref, n, current)}, nil
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
