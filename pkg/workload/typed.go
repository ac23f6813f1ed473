package workload

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// as decodes an object read through the dynamic client into its Go type (*v1alpha1.TApp,
// *appsv1.Deployment, …), once, at the edge of a kind's helper, so that per-kind logic reads
// fields with the compiler's help.
func as[T any](obj *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := fromUnstructured(obj, out); err != nil {
		return nil, err
	}
	return out, nil
}

// joinInts renders numbers as "1, 2, 3".
func joinInts[T ~int | ~int32 | ~int64](xs []T) string {
	sorted := append([]T(nil), xs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var s []string
	for _, x := range sorted {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ", ")
}
