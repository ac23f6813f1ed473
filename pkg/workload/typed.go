package workload

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Typed decodes an object read through the dynamic client into its Go type (*v1alpha1.TApp,
// *appsv1.Deployment, …) so that per-kind logic reads fields with the compiler's help.
func Typed(k Kind, obj *unstructured.Unstructured) (interface{}, error) {
	var out interface{}
	switch k.Name {
	case TApp.Name:
		out = &v1alpha1.TApp{}
	case UnitedDeployment.Name:
		out = &v1alpha1.UnitedDeployment{}
	case Canary.Name:
		out = &v1alpha1.Canary{}
	case Deployment.Name:
		out = &appsv1.Deployment{}
	case StatefulSet.Name:
		out = &appsv1.StatefulSet{}
	default:
		return nil, fmt.Errorf("unknown kind %s", k.Name)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", k.Short, obj.GetName(), err)
	}
	return out, nil
}

// AsTApp, AsUnitedDeployment, AsCanary, AsDeployment and AsStatefulSet decode an object of
// that kind.
func AsTApp(obj *unstructured.Unstructured) (*v1alpha1.TApp, error) {
	t, err := Typed(TApp, obj)
	if err != nil {
		return nil, err
	}
	return t.(*v1alpha1.TApp), nil
}

func AsUnitedDeployment(obj *unstructured.Unstructured) (*v1alpha1.UnitedDeployment, error) {
	t, err := Typed(UnitedDeployment, obj)
	if err != nil {
		return nil, err
	}
	return t.(*v1alpha1.UnitedDeployment), nil
}

func AsCanary(obj *unstructured.Unstructured) (*v1alpha1.Canary, error) {
	t, err := Typed(Canary, obj)
	if err != nil {
		return nil, err
	}
	return t.(*v1alpha1.Canary), nil
}

func AsDeployment(obj *unstructured.Unstructured) (*appsv1.Deployment, error) {
	t, err := Typed(Deployment, obj)
	if err != nil {
		return nil, err
	}
	return t.(*appsv1.Deployment), nil
}

func AsStatefulSet(obj *unstructured.Unstructured) (*appsv1.StatefulSet, error) {
	t, err := Typed(StatefulSet, obj)
	if err != nil {
		return nil, err
	}
	return t.(*appsv1.StatefulSet), nil
}

// SubsetNames lists a UnitedDeployment's subsets in the order of spec.topology.subsets.
func SubsetNames(ud *v1alpha1.UnitedDeployment) []string {
	var out []string
	for _, s := range ud.Spec.Topology.Subsets {
		out = append(out, s.Name)
	}
	return out
}

// UnknownSubsetError is the one-line error for a subset name a UnitedDeployment does not have.
func UnknownSubsetError(ref Ref, ud *v1alpha1.UnitedDeployment, name string) error {
	return fmt.Errorf("%s has no subset %q: its subsets are %s", ref, name, strings.Join(SubsetNames(ud), ", "))
}

// HasSubset reports whether a UnitedDeployment lists a subset of that name.
func HasSubset(ud *v1alpha1.UnitedDeployment, name string) bool {
	for _, s := range ud.Spec.Topology.Subsets {
		if s.Name == name {
			return true
		}
	}
	return false
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
