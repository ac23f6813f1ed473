package workload

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// statusOf is the rollout status f reads from obj decoded as a T.
func statusOf[T any](obj *unstructured.Unstructured, f func(*T) RolloutStatus) (RolloutStatus, error) {
	x, err := as[T](obj)
	if err != nil {
		return RolloutStatus{}, err
	}
	return f(x), nil
}

// metaObjects points at each item of a typed list.
func metaObjects[T any, P interface {
	*T
	metav1.Object
}](items []T) []metav1.Object {
	out := make([]metav1.Object, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]))
	}
	return out
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
