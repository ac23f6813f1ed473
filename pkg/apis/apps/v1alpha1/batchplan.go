package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// CanaryBatchPlan returns the number of canary pods of every batch of spec (element i is batch i+1).
//
// With spec.batches = N, batch k < N holds 1 + (k−1)·round(replicas/N) canary pods (round half
// up) and batch N holds every replica: 10 replicas in 4 batches give 1, 4, 7, 10. With
// spec.batchSizes, an integer is a pod count and a percentage is a share of replicas rounded half
// up. Every size is capped at replicas and never smaller than the batch before, and the last batch
// always holds every replica, so a plan always ends with the stable Deployment empty.
func CanaryBatchPlan(spec *CanarySpec) ([]int32, error) {
	replicas := spec.Replicas
	if replicas < 0 {
		return nil, fmt.Errorf("replicas is %d; it cannot be negative", replicas)
	}
	var sizes []int32
	switch {
	case spec.Batches != nil && len(spec.BatchSizes) > 0:
		return nil, fmt.Errorf("set exactly one of batches or batchSizes")
	case spec.Batches != nil:
		n := *spec.Batches
		if n < 1 {
			return nil, fmt.Errorf("batches is %d; it must be at least 1", n)
		}
		step := (2*replicas + n) / (2 * n) // round(replicas/n), half up
		sizes = make([]int32, n)
		for k := int32(1); k < n; k++ {
			sizes[k-1] = 1 + (k-1)*step
		}
	case len(spec.BatchSizes) > 0:
		sizes = make([]int32, len(spec.BatchSizes))
		for i, b := range spec.BatchSizes {
			v, err := batchSize(b, replicas)
			if err != nil {
				return nil, fmt.Errorf("batchSizes[%d]: %v", i, err)
			}
			sizes[i] = v
		}
	default:
		return nil, fmt.Errorf("set one of batches or batchSizes")
	}
	sizes[len(sizes)-1] = replicas
	prev := int32(0)
	for i := range sizes {
		sizes[i] = max(prev, min(sizes[i], replicas))
		prev = sizes[i]
	}
	return sizes, nil
}

// batchSize resolves one of batchSizes: an integer, or a percentage of replicas rounded half up.
func batchSize(b intstr.IntOrString, replicas int32) (int32, error) {
	if b.Type == intstr.Int {
		if b.IntVal < 1 {
			return 0, fmt.Errorf("%d is not a positive number of pods", b.IntVal)
		}
		return b.IntVal, nil
	}
	s, ok := strings.CutSuffix(b.StrVal, "%")
	if !ok {
		// A string without % is accepted as a number, as intstr does elsewhere.
		v, err := strconv.Atoi(b.StrVal)
		if err != nil || v < 1 {
			return 0, fmt.Errorf("%q is neither a positive number of pods nor a percentage", b.StrVal)
		}
		return int32(min(v, 1<<30)), nil
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 100 {
		return 0, fmt.Errorf("%q is not a percentage from 1%% to 100%%", b.StrVal)
	}
	return int32((int64(p)*int64(replicas) + 50) / 100), nil
}
