package workload

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Promotable lists the kinds promote acts on (the Promoters), in the order its messages name
// them; TestCapabilityLists checks it holds every Promoter.
var Promotable = []Kind{Canary, UnitedDeployment}

// PromoteOptions is what promote was asked: --full (a Canary), --subset and --all (a
// UnitedDeployment).
type PromoteOptions struct {
	Full    bool
	Subsets []string
	All     bool
}

// Promoter is a kind promote acts on.
type Promoter interface {
	// CheckPromote refuses options that do not fit the kind.
	CheckPromote(ref Ref, o PromoteOptions) error
	// Promote decides the change; batch is the Canary batch it approves (0 for none).
	Promote(ref Ref, obj *unstructured.Unstructured, o PromoteOptions) (change Change, batch int32, err error)
}

// CheckPromote refuses options that do not fit ref's kind.
func CheckPromote(ref Ref, o PromoteOptions) error {
	p, err := capability[Promoter](ref, "cannot be promoted")
	if err != nil {
		return err
	}
	return p.CheckPromote(ref, o)
}

// Promote decides what `promote` does to an object (its kind's Promoter).
func Promote(ref Ref, obj *unstructured.Unstructured, o PromoteOptions) (Change, int32, error) {
	p, err := capability[Promoter](ref, "cannot be promoted")
	if err != nil {
		return Change{}, 0, err
	}
	return p.Promote(ref, obj, o)
}

// approvedBatchPath is where a Canary records the highest batch a person approved.
var approvedBatchPath = []string{"spec", "approvedBatch"}

// CanaryBatchCount is the number of steps (batches) of a Canary's release, as the agent
// computes it, the final 100% step included (0 for a spec the agent cannot plan).
func CanaryBatchCount(c *v1alpha1.Canary) int32 {
	steps, err := v1alpha1.CanarySteps(&c.Spec)
	if err != nil {
		return 0
	}
	return int32(len(steps))
}

// WaitingBatch is the batch a Canary is paused at, waiting for promotion (status.currentBatch
// whose state is Paused), or 0 when it is not waiting for one.
func WaitingBatch(c *v1alpha1.Canary) int32 {
	k := c.Status.CurrentBatch
	if k < 1 {
		return 0
	}
	for _, b := range c.Status.Batches {
		if b.Index == k && b.State == v1alpha1.BatchPaused {
			return k
		}
	}
	return 0
}

// ApprovedBatch reads spec.approvedBatch as stored: its value, and whether it is present at all
// (an object written by a client that omits zero values may lack it).
func ApprovedBatch(obj *unstructured.Unstructured) (value int64, present bool, err error) {
	return unstructured.NestedInt64(obj.Object, approvedBatchPath...)
}

// ApproveBatchPatch is the JSON patch that moves spec.approvedBatch from its value as read
// (present or not) to batch: a "test" of the value read, then its replacement. Two promotes of
// the same paused batch both test the same old value; the first one changes it, so the second
// fails its test and changes nothing: exactly one batch is approved. When the field is absent
// the test asserts that (value null) and the second op adds it.
func ApproveBatchPatch(current int64, present bool, batch int32) (Patch, error) {
	path := Pointer(approvedBatchPath...)
	if !present {
		return JSONPatch(Test(path, nil), Add(path, batch))
	}
	return JSONPatch(Test(path, current), Replace(path, batch))
}

// PromoteCanary decides what `promote` does to a Canary: approve the batch it waits at, or,
// with full, every batch (spec.approvedBatch = the number of batches).
//
// It refuses a Canary that is rolling back, and (without full) one that is not waiting for
// promotion. It does not touch spec.paused: a Canary held by `pause` stays held until
// `resume`, and the confirmation line says so. It also returns the batch it approves (0 when
// there is nothing to do).
func PromoteCanary(ref Ref, obj *unstructured.Unstructured, full bool) (Change, int32, error) {
	c, err := AsCanary(obj)
	if err != nil {
		return Change{}, 0, err
	}
	approved, present, err := ApprovedBatch(obj)
	if err != nil {
		return Change{}, 0, fmt.Errorf("%s: spec.approvedBatch: %w", ref, err)
	}
	n := CanaryBatchCount(c)
	if c.Spec.Rollback || c.Status.Phase == v1alpha1.CanaryRollingBack || c.Status.Phase == v1alpha1.CanaryRolledBack {
		return Change{}, 0, fmt.Errorf("%s is rolling back (spec.rollback is true): there is nothing to promote", ref)
	}
	if c.Status.Phase == v1alpha1.CanaryCompleted && c.Generation == c.Status.ObservedGeneration {
		return Unchanged(ref, "%s has completed all %d batches: nothing to promote", ref, n), 0, nil
	}
	held := ""
	if c.Spec.Paused {
		held = fmt.Sprintf("; it stays held by spec.paused until `kubectl workload resume %s`", ref)
	}

	var batch int32
	var line string
	if full {
		if approved >= int64(n) {
			return Unchanged(ref, "%s: every batch (%d) is already approved", ref, n), 0, nil
		}
		batch = n
		line = fmt.Sprintf("%s fully promoted: all %d batches approved%s", ref, n, held)
	} else {
		batch = PromotableBatch(c)
		if batch == 0 {
			state := string(c.Status.Phase)
			if state == "" {
				state = "not yet observed by the agent"
			}
			if c.Spec.Paused {
				return Change{}, 0, fmt.Errorf("%s is held by spec.paused, not waiting for promotion (phase %s, batch %d of %d): resume it with `kubectl workload resume %s`",
					ref, state, c.Status.CurrentBatch, n, ref)
			}
			return Change{}, 0, fmt.Errorf("%s is not paused at a batch (phase %s, batch %d of %d): nothing to approve; --full approves every batch",
				ref, state, c.Status.CurrentBatch, n)
		}
		if approved >= int64(batch) {
			return Unchanged(ref, "%s: batch %d of %d is already approved", ref, batch, n), 0, nil
		}
		line = fmt.Sprintf("%s promoted: batch %d of %d approved%s", ref, batch, n, held)
	}
	p, err := ApproveBatchPatch(approved, present, batch)
	if err != nil {
		return Change{}, 0, err
	}
	return Change{Ref: ref, Patch: &p, Line: line}, batch, nil
}

// Approved reports whether a Canary, read again after a promote's precondition failed, has the
// batch approved (by the concurrent promote that won).
func Approved(obj *unstructured.Unstructured, batch int32) bool {
	v, _, err := ApprovedBatch(obj)
	return err == nil && v >= int64(batch)
}

// PartitionsPatch is the merge patch that sets the given subsets' partitions and no other.
func PartitionsPatch(partitions map[string]int32) (Patch, error) {
	data, err := partition.SubsetsPatch(partitions)
	return Patch{Type: types.MergePatchType, Data: data}, err
}

// PromoteSubsets decides what `promote --subset … | --all` does to a UnitedDeployment: set the
// partitions of those subsets to 0, so that all their pods move to the updated revision. Subsets
// already at 0 are left out of the patch; an unknown subset is an error and changes nothing.
func PromoteSubsets(ref Ref, obj *unstructured.Unstructured, subsets []string, all bool) (Change, error) {
	ud, err := AsUnitedDeployment(obj)
	if err != nil {
		return Change{}, err
	}
	switch {
	case all && len(subsets) > 0:
		return Change{}, fmt.Errorf("%s: use either --subset or --all, not both", ref)
	case all:
		subsets = SubsetNames(ud)
	case len(subsets) == 0:
		return Change{}, fmt.Errorf("%s: name the subsets to promote with --subset NAME (repeatable) or --all; its subsets are %s", ref, strings.Join(SubsetNames(ud), ", "))
	}
	for _, s := range subsets {
		if !HasSubset(ud, s) {
			return Change{}, UnknownSubsetError(ref, ud, s)
		}
	}
	current := partition.Subsets(ud)
	set := map[string]int32{}
	var names []string
	for _, s := range subsets {
		if current[s] > 0 {
			if _, dup := set[s]; !dup {
				names = append(names, s)
			}
			set[s] = 0
		}
	}
	if len(set) == 0 {
		return Unchanged(ref, "%s: %s already at partition 0 (fully promoted)", ref, subsetsPhrase(subsets)), nil
	}
	sort.Strings(names)
	p, err := PartitionsPatch(set)
	if err != nil {
		return Change{}, err
	}
	f := fleetOf(ud) // fleet.go: names the clusters of the subsets, if any
	return Change{Ref: ref, Patch: &p, Line: fmt.Sprintf("%s promoted: partition 0 on %s%s", ref, f.subsetsPhraseIn(names), f.awayNote(names))}, nil
}

func subsetsPhrase(subsets []string) string {
	seen := map[string]bool{}
	var uniq []string
	for _, s := range subsets {
		if !seen[s] {
			seen[s] = true
			uniq = append(uniq, s)
		}
	}
	if len(uniq) == 1 {
		return "subset " + uniq[0] + " is"
	}
	return "subsets " + strings.Join(uniq, ", ") + " are"
}
