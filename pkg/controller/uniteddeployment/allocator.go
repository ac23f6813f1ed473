package uniteddeployment

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// AllocationError is an impossible replica split: the explicit subset replicas add up to more
// than spec.replicas, or to less while every subset is explicit. It is the user's to fix;
// nothing is changed while it lasts.
type AllocationError struct {
	// Total is spec.replicas.
	Total int32
	// Explicit is the sum of the explicit subset replicas.
	Explicit int32
	// AllExplicit is true when every subset has explicit replicas.
	AllExplicit bool
}

func (e *AllocationError) Error() string {
	if e.Explicit > e.Total {
		return fmt.Sprintf("the subsets' explicit replicas add up to %d, more than spec.replicas %d", e.Explicit, e.Total)
	}
	return fmt.Sprintf("every subset has explicit replicas and they add up to %d, less than spec.replicas %d; leave one subset's replicas unset or make them add up", e.Explicit, e.Total)
}

// explicitReplicas resolves a subset's explicit replicas: an integer, or a percentage of total
// rounded half up. ok is false when the subset has none.
func explicitReplicas(v *intstr.IntOrString, total int32) (n int32, ok bool, err error) {
	if v == nil {
		return 0, false, nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return 0, false, fmt.Errorf("replicas %d is negative", v.IntVal)
		}
		return v.IntVal, true, nil
	}
	s := v.StrVal
	if !strings.HasSuffix(s, "%") {
		// A numeric string is accepted as an integer.
		i, err := strconv.ParseInt(s, 10, 32)
		if err != nil || i < 0 {
			return 0, false, fmt.Errorf("replicas %q is neither an integer nor a percentage", s)
		}
		return int32(i), true, nil
	}
	p, err := strconv.ParseInt(strings.TrimSuffix(s, "%"), 10, 32)
	if err != nil || p < 0 || p > 100 {
		return 0, false, fmt.Errorf("replicas %q is not a percentage from 0%% to 100%%", s)
	}
	// Half up: floor((p*total + 50) / 100).
	return int32((p*int64(total) + 50) / 100), true, nil
}

// Allocate splits total replicas among subsets. Explicit values (integers, or percentages of
// total rounded half up) are given first; what is left is split evenly among the other subsets.
// Those are ordered by (current replicas, name) and the remainder of the division goes, one
// replica each, to the last ones in that order: the subsets already holding the most, so that
// as few pods as possible move. current maps a subset name to its workload's replicas (absent:
// 0). The result maps every subset name to its replicas.
//
// An *AllocationError is returned when the explicit values add up to more than total, or to
// less while every subset is explicit.
func Allocate(total int32, subsets []appsv1alpha1.Subset, current map[string]int32) (map[string]int32, error) {
	out := make(map[string]int32, len(subsets))
	var explicitSum int64
	var rest []string
	for i := range subsets {
		s := &subsets[i]
		n, ok, err := explicitReplicas(s.Replicas, total)
		if err != nil {
			return nil, fmt.Errorf("subset %s: %w", s.Name, err)
		}
		if !ok {
			rest = append(rest, s.Name)
			continue
		}
		out[s.Name] = n
		explicitSum += int64(n)
	}
	if explicitSum > int64(total) || (len(rest) == 0 && explicitSum < int64(total)) {
		return nil, &AllocationError{Total: total, Explicit: int32(min(explicitSum, int64(^uint32(0)>>1))), AllExplicit: len(rest) == 0}
	}
	if len(rest) == 0 {
		return out, nil
	}
	sort.SliceStable(rest, func(i, j int) bool {
		ci, cj := current[rest[i]], current[rest[j]]
		if ci != cj {
			return ci < cj
		}
		return rest[i] < rest[j]
	})
	left := int64(total) - explicitSum
	base := int32(left / int64(len(rest)))
	remainder := int(left % int64(len(rest)))
	for i, name := range rest {
		out[name] = base
		if i >= len(rest)-remainder {
			out[name]++
		}
	}
	return out, nil
}
