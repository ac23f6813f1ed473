package workload

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Abortable lists the kinds abort acts on: the Aborters.
var Abortable = kindsWith[Aborter]()

// Abort decides what `abort` does to an object (its kind's Aborter).
func Abort(ref Ref, obj *unstructured.Unstructured) (Change, error) {
	a, err := capability[Aborter](ref, "cannot be aborted")
	if err != nil {
		return Change{}, err
	}
	return a.Abort(ref, obj)
}
