package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// WithHistory lists the kinds history and undo act on. A Canary has no history: abort is its
// way back.
var WithHistory = []Kind{UnitedDeployment, StatefulSet, DaemonSet, Deployment, TApp}

var (
	controllerRevisions = appsv1.SchemeGroupVersion.WithResource("controllerrevisions")
	replicaSets         = appsv1.SchemeGroupVersion.WithResource("replicasets")
)

const (
	// annotationDeploymentRevision is the revision number the Deployment controller writes on
	// a Deployment and its ReplicaSets.
	annotationDeploymentRevision = "deployment.kubernetes.io/revision"
	// annotationChangeCause is the change cause kubectl users set on a workload.
	annotationChangeCause = "kubernetes.io/change-cause"
	// labelPodTemplateHash is the label the Deployment controller adds to a ReplicaSet's
	// template; it is not part of the Deployment's template.
	labelPodTemplateHash = appsv1.DefaultDeploymentUniqueLabelKey
)

// Revision is one entry of a workload's history.
//
//   - UnitedDeployment: a ControllerRevision labelled apps.workload.dev/united-deployment=<ud>
//     and controlled by it; Template is the spec.template (subset template) it holds.
//   - StatefulSet, DaemonSet: a ControllerRevision selected by the workload's selector and
//     controlled by it; Template is the pod template.
//   - Deployment: a ReplicaSet selected by the Deployment's selector and controlled by it,
//     numbered by its deployment.kubernetes.io/revision annotation; Template is its pod
//     template without the pod-template-hash label.
//   - TApp: a ControllerRevision labelled app.kubernetes.io/managed-by=workload-agent and
//     tapp.apps.workload.dev/name=<tapp> and controlled by it; Template is the spec.template it
//     holds and TemplatePool the spec.templatePool (a TApp's revision covers both).
type Revision struct {
	Number int64 `json:"revision"`
	// Name is the ControllerRevision or ReplicaSet.
	Name        string          `json:"name"`
	Current     bool            `json:"current"`
	ChangeCause string          `json:"changeCause,omitempty"`
	Images      []string        `json:"images,omitempty"`
	Template    json.RawMessage `json:"template"`
	// TemplatePool is a TApp revision's spec.templatePool (absent when it had none).
	TemplatePool map[string]json.RawMessage `json:"templatePool,omitempty"`
}

// Revisions reads a workload's history, oldest first, with the revision matching the current
// template marked Current. Lists use label selectors only.
func Revisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	var revs []Revision
	var err error
	switch ref.Kind.Name {
	case UnitedDeployment.Name:
		revs, err = controllerRevisionHistory(ctx, client, namespace, ref, obj,
			labels.SelectorFromSet(labels.Set{v1alpha1.LabelUnitedDeploymentName: obj.GetName()}).String(), "updatedRevision")
	case StatefulSet.Name, DaemonSet.Name:
		sel, selErr := historySelector(ref, obj)
		if selErr != nil {
			return nil, selErr
		}
		revs, err = controllerRevisionHistory(ctx, client, namespace, ref, obj, sel, "updateRevision")
	case Deployment.Name:
		revs, err = replicaSetHistory(ctx, client, namespace, ref, obj)
	case TApp.Name:
		revs, err = controllerRevisionHistory(ctx, client, namespace, ref, obj,
			labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByAgent, v1alpha1.LabelTAppName: obj.GetName()}).String(), "updateRevision")
	default:
		return nil, fmt.Errorf("a %s has no revision history", ref.Kind.Name)
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(revs, func(i, j int) bool { return revs[i].Number < revs[j].Number })
	if err := markCurrent(ref, obj, revs); err != nil {
		return nil, err
	}
	return revs, nil
}

func historySelector(ref Ref, obj *unstructured.Unstructured) (string, error) {
	m, ok, _ := unstructured.NestedMap(obj.Object, "spec", "selector")
	if !ok {
		return "", fmt.Errorf("%s has no spec.selector", ref)
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return "", fmt.Errorf("%s: spec.selector: %w", ref, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return "", fmt.Errorf("%s: spec.selector: %w", ref, err)
	}
	if sel.Empty() {
		return "", fmt.Errorf("%s: its spec.selector is empty; refusing to list every object of the namespace", ref)
	}
	return sel.String(), nil
}

func ownedBy(o metav1.Object, owner *unstructured.Unstructured) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.UID == owner.GetUID()
}

func controllerRevisionHistory(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured, selector, statusField string) ([]Revision, error) {
	list, err := client.Resource(controllerRevisions).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("%s: listing its ControllerRevisions: %w", ref, err)
	}
	var revs []Revision
	for i := range list.Items {
		var cr appsv1.ControllerRevision
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &cr); err != nil {
			return nil, fmt.Errorf("%s: ControllerRevision %s: %w", ref, list.Items[i].GetName(), err)
		}
		if !ownedBy(&cr, obj) {
			continue
		}
		tpl, pool, err := revisionTemplate(cr.Data.Raw)
		if err != nil {
			return nil, fmt.Errorf("%s: ControllerRevision %s: %w", ref, cr.Name, err)
		}
		revs = append(revs, Revision{Number: cr.Revision, Name: cr.Name, ChangeCause: cr.Annotations[annotationChangeCause], Template: tpl, TemplatePool: pool})
	}
	return revs, nil
}

// revisionTemplate reads the template a ControllerRevision holds. The StatefulSet and DaemonSet
// controllers and our UnitedDeployment and TApp controllers store a patch that restores
// spec.template: {"spec":{"template":{…}}} (the native ones' with "$patch":"replace" inside,
// which is dropped here; the TApp's with spec.templatePool beside it, returned as pool).
func revisionTemplate(data []byte) (json.RawMessage, map[string]json.RawMessage, error) {
	var patch struct {
		Spec struct {
			Template     map[string]interface{}     `json:"template"`
			TemplatePool map[string]json.RawMessage `json:"templatePool"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, nil, fmt.Errorf("its data is not a spec.template patch: %w", err)
	}
	if patch.Spec.Template == nil {
		return nil, nil, fmt.Errorf("its data holds no spec.template")
	}
	delete(patch.Spec.Template, "$patch")
	tpl, err := json.Marshal(patch.Spec.Template)
	return tpl, patch.Spec.TemplatePool, err
}

func replicaSetHistory(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	sel, err := historySelector(ref, obj)
	if err != nil {
		return nil, err
	}
	list, err := client.Resource(replicaSets).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("%s: listing its ReplicaSets: %w", ref, err)
	}
	var revs []Revision
	for i := range list.Items {
		rs := &list.Items[i]
		if !ownedBy(rs, obj) {
			continue
		}
		n, err := strconv.ParseInt(rs.GetAnnotations()[annotationDeploymentRevision], 10, 64)
		if err != nil {
			continue // not yet numbered by the Deployment controller
		}
		tpl, _, _ := unstructured.NestedMap(rs.Object, "spec", "template")
		if l, ok, _ := unstructured.NestedStringMap(tpl, "metadata", "labels"); ok {
			delete(l, labelPodTemplateHash)
			if len(l) == 0 {
				unstructured.RemoveNestedField(tpl, "metadata", "labels")
			} else {
				_ = unstructured.SetNestedStringMap(tpl, l, "metadata", "labels")
			}
		}
		raw, err := json.Marshal(tpl)
		if err != nil {
			return nil, err
		}
		revs = append(revs, Revision{Number: n, Name: rs.GetName(), ChangeCause: rs.GetAnnotations()[annotationChangeCause], Template: raw})
	}
	return revs, nil
}

// markCurrent marks the revision whose template equals the object's current template (else the
// one the status names) and fills in the images.
func markCurrent(ref Ref, obj *unstructured.Unstructured, revs []Revision) error {
	current, err := currentTemplate(ref, obj)
	if err != nil {
		return err
	}
	pool, err := currentTemplatePool(ref, obj)
	if err != nil {
		return err
	}
	found := false
	for i := len(revs) - 1; i >= 0; i-- {
		if same, _ := sameRevision(ref, revs[i], current, pool); same {
			revs[i].Current, found = true, true
			break
		}
	}
	if !found {
		var name string
		switch ref.Kind.Name {
		case UnitedDeployment.Name:
			name, _, _ = unstructured.NestedString(obj.Object, "status", "updatedRevision")
		case StatefulSet.Name, TApp.Name:
			name, _, _ = unstructured.NestedString(obj.Object, "status", "updateRevision")
		case Deployment.Name:
			n := obj.GetAnnotations()[annotationDeploymentRevision]
			for i := range revs {
				if strconv.FormatInt(revs[i].Number, 10) == n {
					name = revs[i].Name
				}
			}
		}
		for i := range revs {
			if name != "" && revs[i].Name == name {
				revs[i].Current = true
			}
		}
	}
	_, err = withImages(revs)
	return err
}

// currentTemplate is the object's template in the form its revisions hold.
func currentTemplate(ref Ref, obj *unstructured.Unstructured) (json.RawMessage, error) {
	path := []string{"spec", "template"}
	m, _, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// currentTemplatePool is a TApp's spec.templatePool in the form its revisions hold (nil for
// other kinds and for a TApp without one).
func currentTemplatePool(ref Ref, obj *unstructured.Unstructured) (map[string]json.RawMessage, error) {
	if ref.Kind.Name != TApp.Name {
		return nil, nil
	}
	m, _, err := unstructured.NestedMap(obj.Object, "spec", "templatePool")
	if err != nil || len(m) == 0 {
		return nil, err
	}
	pool := make(map[string]json.RawMessage, len(m))
	for name, tpl := range m {
		if pool[name], err = json.Marshal(tpl); err != nil {
			return nil, err
		}
	}
	return pool, nil
}

// sameRevision reports whether revision r holds the given template (and, for a TApp, template
// pool).
func sameRevision(ref Ref, r Revision, template json.RawMessage, pool map[string]json.RawMessage) (bool, error) {
	same, err := SameTemplate(ref, r.Template, template)
	if err != nil || !same || len(r.TemplatePool) != len(pool) {
		return false, err
	}
	for name, tpl := range pool {
		theirs, ok := r.TemplatePool[name]
		if !ok {
			return false, nil
		}
		if same, err := SameTemplate(ref, theirs, tpl); err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// SameTemplate reports whether two templates of a kind (subset templates for a
// UnitedDeployment, pod templates otherwise) are semantically equal.
func SameTemplate(ref Ref, a, b json.RawMessage) (bool, error) {
	if ref.Kind.Name == UnitedDeployment.Name {
		var x, y v1alpha1.SubsetTemplate
		if err := json.Unmarshal(a, &x); err != nil {
			return false, err
		}
		if err := json.Unmarshal(b, &y); err != nil {
			return false, err
		}
		return apiequality.Semantic.DeepEqual(x, y), nil
	}
	var x, y corev1.PodTemplateSpec
	if err := json.Unmarshal(a, &x); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false, err
	}
	return apiequality.Semantic.DeepEqual(x, y), nil
}

// RevisionPodTemplate is the pod template of a revision (inside the subset template for a
// UnitedDeployment).
func RevisionPodTemplate(ref Ref, r Revision) (*corev1.PodTemplateSpec, error) {
	if ref.Kind.Name != UnitedDeployment.Name {
		var t corev1.PodTemplateSpec
		err := json.Unmarshal(r.Template, &t)
		return &t, err
	}
	var st v1alpha1.SubsetTemplate
	if err := json.Unmarshal(r.Template, &st); err != nil {
		return nil, err
	}
	switch {
	case st.StatefulSetTemplate != nil:
		return &st.StatefulSetTemplate.Spec.Template, nil
	case st.DeploymentTemplate != nil:
		return &st.DeploymentTemplate.Spec.Template, nil
	case st.TAppTemplate != nil:
		return &st.TAppTemplate.Spec.Template, nil
	}
	return &corev1.PodTemplateSpec{}, nil
}

func withImages(revs []Revision) ([]Revision, error) {
	for i := range revs {
		var holder struct {
			Spec corev1.PodSpec `json:"spec"`
			// A UnitedDeployment's subset template holds the pod template one level down.
			StatefulSetTemplate *struct {
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			} `json:"statefulSetTemplate"`
			DeploymentTemplate *struct {
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			} `json:"deploymentTemplate"`
			TAppTemplate *struct {
				Spec struct {
					Template corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			} `json:"tappTemplate"`
		}
		if err := json.Unmarshal(revs[i].Template, &holder); err != nil {
			return nil, fmt.Errorf("revision %d: %w", revs[i].Number, err)
		}
		spec := holder.Spec
		switch {
		case holder.StatefulSetTemplate != nil:
			spec = holder.StatefulSetTemplate.Spec.Template.Spec
		case holder.DeploymentTemplate != nil:
			spec = holder.DeploymentTemplate.Spec.Template.Spec
		case holder.TAppTemplate != nil:
			spec = holder.TAppTemplate.Spec.Template.Spec
		}
		revs[i].Images = nil
		for _, c := range spec.Containers {
			revs[i].Images = append(revs[i].Images, c.Name+"="+c.Image)
		}
		pool, err := poolImages(revs[i].TemplatePool)
		if err != nil {
			return nil, fmt.Errorf("revision %d: %w", revs[i].Number, err)
		}
		revs[i].Images = append(revs[i].Images, pool...)
	}
	return revs, nil
}

// poolImages lists the images of a TApp revision's templatePool as ENTRY/CONTAINER=IMAGE, by
// entry name.
func poolImages(pool map[string]json.RawMessage) ([]string, error) {
	names := make([]string, 0, len(pool))
	for n := range pool {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		var t corev1.PodTemplateSpec
		if err := json.Unmarshal(pool[n], &t); err != nil {
			return nil, fmt.Errorf("templatePool entry %s: %w", n, err)
		}
		for _, c := range t.Spec.Containers {
			out = append(out, n+"/"+c.Name+"="+c.Image)
		}
	}
	return out, nil
}

// FindRevision returns the revision numbered n, or an error listing the revisions.
func FindRevision(ref Ref, revs []Revision, n int64) (Revision, error) {
	var numbers []int64
	for _, r := range revs {
		if r.Number == n {
			return r, nil
		}
		numbers = append(numbers, r.Number)
	}
	if len(numbers) == 0 {
		return Revision{}, fmt.Errorf("%s has no revision %d: it has no revisions", ref, n)
	}
	return Revision{}, fmt.Errorf("%s has no revision %d: its revisions are %s", ref, n, joinInts(numbers))
}

// Undo decides what `undo` does: restore the template of revision toRevision, or with 0 the
// latest revision that is not the current one. The patch is a JSON patch that tests
// metadata.generation as read (a spec changed meanwhile is never overwritten) and replaces the
// template (for a TApp spec.template and spec.templatePool, which its revisions cover). The
// controller records the restored template as the newest revision, so a second undo goes back
// again, as `kubectl rollout undo` does.
func Undo(ref Ref, obj *unstructured.Unstructured, revs []Revision, toRevision int64) (Change, error) {
	if err := CheckUndoable(ref, obj); err != nil {
		return Change{}, err
	}
	return UndoHeld(ref, obj, revs, toRevision)
}

// UndoHeld is Undo of a Deployment a Canary targets, which the Canary holds paused: the
// template written back is the Canary's next release, so its pause does not refuse it.
func UndoHeld(ref Ref, obj *unstructured.Unstructured, revs []Revision, toRevision int64) (Change, error) {
	target, err := undoTarget(ref, revs, toRevision)
	if err != nil {
		return Change{}, err
	}
	if target.Current {
		return Unchanged(ref, "%s: skipped, revision %d is the current template", ref, target.Number), nil
	}
	current, err := currentTemplate(ref, obj)
	if err != nil {
		return Change{}, err
	}
	pool, err := currentTemplatePool(ref, obj)
	if err != nil {
		return Change{}, err
	}
	if same, _ := sameRevision(ref, target, current, pool); same {
		return Unchanged(ref, "%s: skipped, the current template already matches revision %d", ref, target.Number), nil
	}
	ops := []Op{GenerationTest(obj), Replace(Pointer("spec", "template"), target.Template)}
	if ref.Kind.Name == TApp.Name {
		switch _, has := obj.Object["spec"].(map[string]interface{})["templatePool"]; {
		case len(target.TemplatePool) > 0:
			ops = append(ops, Add(Pointer("spec", "templatePool"), target.TemplatePool))
		case has:
			ops = append(ops, Remove(Pointer("spec", "templatePool")))
		}
	}
	p, err := JSONPatch(ops...)
	if err != nil {
		return Change{}, err
	}
	return Change{Ref: ref, Patch: &p, Line: fmt.Sprintf("%s rolled back to revision %d (%s)", ref, target.Number, target.Name)}, nil
}

// undoTarget is revision toRevision, or with 0 the latest revision that is not the current one.
func undoTarget(ref Ref, revs []Revision, toRevision int64) (Revision, error) {
	if toRevision != 0 {
		return FindRevision(ref, revs, toRevision)
	}
	for i := len(revs) - 1; i >= 0; i-- {
		if !revs[i].Current {
			return revs[i], nil
		}
	}
	return Revision{}, fmt.Errorf("%s has no previous revision to go back to", ref)
}

// CheckUndoable refuses, before anything is listed, what undo cannot do to the object: a
// paused Deployment (as kubectl rollout undo does).
func CheckUndoable(ref Ref, obj *unstructured.Unstructured) error {
	if ref.Kind.Name == Deployment.Name {
		if paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused"); paused {
			return fmt.Errorf("%s is paused: resume it (kubectl workload resume %s) before undo", ref, ref)
		}
	}
	return nil
}
