package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// pausedPath is where each pausable kind keeps its pause switch.
var pausedPath = map[string][]string{
	TApp.Name:             {"spec", "updateStrategy", "paused"},
	UnitedDeployment.Name: {"spec", "updateStrategy", "paused"},
	Canary.Name:           {"spec", "paused"},
	Deployment.Name:       {"spec", "paused"},
}

// Pausable lists the kinds pause and resume act on. A StatefulSet has no pause switch: hold its
// pods with set-partition instead.
var Pausable = []Kind{TApp, UnitedDeployment, Canary, Deployment}

// IsPaused reads an object's pause switch.
func IsPaused(k Kind, obj *unstructured.Unstructured) (bool, error) {
	path, ok := pausedPath[k.Name]
	if !ok {
		return false, fmt.Errorf("a %s cannot be paused", k.Name)
	}
	paused, _, err := unstructured.NestedBool(obj.Object, path...)
	return paused, err
}

// PausePatch is the merge patch that sets a kind's pause switch and nothing else.
func PausePatch(k Kind, paused bool) ([]byte, error) {
	path, ok := pausedPath[k.Name]
	if !ok {
		return nil, fmt.Errorf("a %s cannot be paused", k.Name)
	}
	return mergePatch(path, paused)
}

// PauseChange is what pause (paused true) or resume (false) does to an object: a merge patch of
// its pause switch, or nothing when the switch is already set that way.
func PauseChange(ref Ref, obj *unstructured.Unstructured, paused bool) (Change, error) {
	current, err := IsPaused(ref.Kind, obj)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %w", ref, err)
	}
	if current == paused {
		return Unchanged(ref, "%s %s", ref, map[bool]string{true: "is already paused", false: "is not paused"}[paused]), nil
	}
	data, err := PausePatch(ref.Kind, paused)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %w", ref, err)
	}
	return Change{Ref: ref, Patch: &Patch{Type: types.MergePatchType, Data: data},
		Line: fmt.Sprintf("%s %s", ref, map[bool]string{true: "paused", false: "resumed"}[paused])}, nil
}
