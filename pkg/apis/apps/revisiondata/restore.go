package revisiondata

import (
	"encoding/json"
	"fmt"
)

// The JSON pointers a restore writes.
const (
	TemplatePath     = "/spec/template"
	TemplatePoolPath = "/spec/templatePool"
)

// Op is one operation of a JSON patch (RFC 6902). Value is left out of a "remove".
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// RestoreOps are the JSON patch operations that put the recorded templates back: spec.template
// replaced whole (a merge patch would keep labels, annotations and fields the newer template
// added), and for a TApp spec.templatePool set to the recorded pool, or removed when the revision
// had none and the workload has one (hasPool). Callers may put a precondition ("test") first.
func (d Data) RestoreOps(hasPool bool) []Op {
	ops := []Op{{Op: "replace", Path: TemplatePath, Value: d.Template}}
	switch {
	case len(d.TemplatePool) > 0:
		ops = append(ops, Op{Op: "add", Path: TemplatePoolPath, Value: d.TemplatePool})
	case hasPool:
		ops = append(ops, Op{Op: "remove", Path: TemplatePoolPath})
	}
	return ops
}

// RestorePatch is RestoreOps as the body of a JSON patch (types.JSONPatchType).
func (d Data) RestorePatch(hasPool bool) ([]byte, error) {
	return json.Marshal(d.RestoreOps(hasPool))
}

// NativeRestorePatch is the strategic merge patch (types.StrategicMergePatchType) that restores
// a StatefulSet's or DaemonSet's revision: its data as recorded, which is such a patch, once it
// is checked to hold a template.
func NativeRestorePatch(data []byte) ([]byte, error) {
	if _, err := Decode(data); err != nil {
		return nil, fmt.Errorf("not a revision of a pod template: %w", err)
	}
	return data, nil
}
