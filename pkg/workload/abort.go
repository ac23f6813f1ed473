package workload

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Abortable lists the kinds abort acts on.
var Abortable = []Kind{Canary}

// rollbackPath is a Canary's rollback switch.
var rollbackPath = []string{"spec", "rollback"}

// AbortPatch is the merge patch that sets a Canary's spec.rollback and nothing else. Setting it
// twice is the same as once, so no precondition is needed.
func AbortPatch() (Patch, error) {
	return MergePatch(rollbackPath, true)
}

// AbortCanary decides what `abort` does to a Canary: start its rollback (the agent scales the
// stable Deployment back up first, then the canary down), or nothing if it already rolls back.
func AbortCanary(ref Ref, obj *unstructured.Unstructured) (Change, error) {
	c, err := AsCanary(obj)
	if err != nil {
		return Change{}, err
	}
	if c.Spec.Rollback {
		if c.Status.Phase == v1alpha1.CanaryRolledBack {
			return Unchanged(ref, "%s is already rolled back", ref), nil
		}
		return Unchanged(ref, "%s is already rolling back", ref), nil
	}
	p, err := AbortPatch()
	if err != nil {
		return Change{}, err
	}
	return Change{Ref: ref, Patch: &p,
		Line: ref.String() + " aborted: rolling back to the stable Deployment " + c.Spec.StableRef.Name}, nil
}
