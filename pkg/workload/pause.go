package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// Pausable lists the kinds pause and resume act on: those with a pause switch. A StatefulSet
// has none: hold its pods with set-partition instead.
var Pausable = kindsWith[Pauser]()

// IsPaused reads an object's pause switch.
func IsPaused(k Kind, obj *unstructured.Unstructured) (bool, error) {
	p, ok := k.helper.(Pauser)
	if !ok {
		return false, fmt.Errorf("a %s cannot be paused", k.Name)
	}
	paused, _, err := unstructured.NestedBool(obj.Object, p.PausedPath()...)
	return paused, err
}

// PausePatch is the merge patch that sets a kind's pause switch and nothing else.
func PausePatch(k Kind, paused bool) ([]byte, error) {
	p, ok := k.helper.(Pauser)
	if !ok {
		return nil, fmt.Errorf("a %s cannot be paused", k.Name)
	}
	return mergePatch(p.PausedPath(), paused)
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
