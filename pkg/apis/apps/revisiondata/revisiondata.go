// Package revisiondata is the one place that knows what a workload's ControllerRevision holds:
// a patch that restores the workload's templates, {"spec":{"template":…}}.
//
//   - The StatefulSet and DaemonSet controllers of kube-controller-manager write the pod template
//     with "$patch":"replace" inside (a strategic merge patch that replaces the template whole).
//   - The agent's UnitedDeployment controller writes the subset template (spec.template).
//   - The agent's TApp controller writes spec.template and, beside it, spec.templatePool when the
//     TApp has one: an instance can run any of them, so a revision covers both.
//
// The controllers encode with it, the Canary targets and the plugin decode with it, and both
// restore a revision with the same patch (RestorePatch), so the format is written once. The bytes
// a controller encodes name its revisions (their hash), so Encode* must keep producing the same
// bytes for the same templates: a change would make every agent record a new revision of
// unchanged workloads.
package revisiondata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// patchDirective is the strategic-merge directive the native controllers put in the template.
const patchDirective = "$patch"

// tappSpec is the spec of a TApp revision. The field order and omitempty are part of the
// revision's hash: keep them.
type tappSpec struct {
	Template     corev1.PodTemplateSpec            `json:"template"`
	TemplatePool map[string]corev1.PodTemplateSpec `json:"templatePool,omitempty"`
}

// EncodeTApp is the data of a TApp's revision: its spec.template and spec.templatePool.
func EncodeTApp(spec *v1alpha1.TAppSpec) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": tappSpec{spec.Template, spec.TemplatePool}})
}

// EncodeUnitedDeployment is the data of a UnitedDeployment's revision: its spec.template.
func EncodeUnitedDeployment(template *v1alpha1.SubsetTemplate) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// EncodeNative is the data the StatefulSet and DaemonSet controllers record for a pod template:
// the template with "$patch":"replace", every key sorted (they build it from a generic map).
// The agent never writes it; tests use it to stand for those controllers.
func EncodeNative(template *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(template)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m[patchDirective] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": m}})
}

// Data is what a revision records, decoded.
type Data struct {
	// Template is spec.template as stored, without the "$patch" directive: a pod template, or a
	// UnitedDeployment's subset template.
	Template json.RawMessage
	// TemplatePool is a TApp revision's spec.templatePool by entry; nil when it had none.
	TemplatePool map[string]json.RawMessage
}

// ErrNoTemplate is the error of data that is JSON but records no spec.template.
var ErrNoTemplate = errors.New("its data holds no spec.template")

// Decode reads a revision's data. Data that is not JSON, or holds no spec.template, is refused
// with an error saying so (a revision someone else wrote, or a revision of another kind).
func Decode(data []byte) (Data, error) {
	var patch struct {
		Spec struct {
			Template     json.RawMessage            `json:"template"`
			TemplatePool map[string]json.RawMessage `json:"templatePool"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &patch); err != nil {
		return Data{}, fmt.Errorf("its data is not a spec.template patch: %w", err)
	}
	tpl := bytes.TrimSpace(patch.Spec.Template)
	if len(tpl) == 0 || bytes.Equal(tpl, []byte("null")) {
		return Data{}, ErrNoTemplate
	}
	if tpl[0] != '{' {
		return Data{}, fmt.Errorf("its spec.template is not an object: %s", tpl)
	}
	tpl, err := withoutDirective(tpl)
	if err != nil {
		return Data{}, err
	}
	if len(patch.Spec.TemplatePool) == 0 {
		patch.Spec.TemplatePool = nil
	}
	return Data{Template: tpl, TemplatePool: patch.Spec.TemplatePool}, nil
}

// withoutDirective drops "$patch" from a template; a template without it is returned as stored,
// byte for byte.
func withoutDirective(tpl json.RawMessage) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(tpl, &top); err != nil {
		return nil, fmt.Errorf("its spec.template is not an object: %w", err)
	}
	if _, ok := top[patchDirective]; !ok {
		return tpl, nil
	}
	delete(top, patchDirective)
	return json.Marshal(top)
}

// PodTemplate is the recorded template as a pod template (a StatefulSet's, DaemonSet's or
// TApp's revision).
func (d Data) PodTemplate() (*corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	if err := json.Unmarshal(d.Template, &t); err != nil {
		return nil, fmt.Errorf("its spec.template is not a pod template: %w", err)
	}
	return &t, nil
}

// SubsetTemplate is the recorded template as a UnitedDeployment's subset template.
func (d Data) SubsetTemplate() (*v1alpha1.SubsetTemplate, error) {
	var t v1alpha1.SubsetTemplate
	if err := json.Unmarshal(d.Template, &t); err != nil {
		return nil, fmt.Errorf("its spec.template is not a UnitedDeployment's subset template: %w", err)
	}
	return &t, nil
}

// Pool is the recorded spec.templatePool as pod templates (nil when there was none).
func (d Data) Pool() (map[string]corev1.PodTemplateSpec, error) {
	if d.TemplatePool == nil {
		return nil, nil
	}
	out := make(map[string]corev1.PodTemplateSpec, len(d.TemplatePool))
	for name, raw := range d.TemplatePool {
		var t corev1.PodTemplateSpec
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("its templatePool entry %s is not a pod template: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// RecordsPodTemplate reports whether revision data records exactly the pod template t (the way
// the DaemonSet and StatefulSet controllers match their revisions). Data that cannot be read
// records nothing.
func RecordsPodTemplate(data []byte, t *corev1.PodTemplateSpec) bool {
	d, err := Decode(data)
	if err != nil {
		return false
	}
	recorded, err := d.PodTemplate()
	return err == nil && apiequality.Semantic.DeepEqual(recorded, t)
}
