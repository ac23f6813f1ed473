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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
)

// WithHistory lists the kinds history and undo act on (the Historians), in the order their
// messages name them; TestCapabilityLists checks it holds every Historian. A Canary has no
// history: abort is its way back.
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

// Historian is a kind history and undo act on. Its revisions are ControllerRevisions (whose data
// format is pkg/apis/apps/revisiondata's) or, for a Deployment, ReplicaSets.
type Historian interface {
	// revisions lists obj's revisions, in any order.
	revisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error)
	// statusRevision names the revision obj's status (or annotations) call the updated one, ""
	// when they name none: the current one when no revision holds the current template.
	statusRevision(obj *unstructured.Unstructured, revs []Revision) string
	// revisionPodTemplate is the pod template in one of the kind's templates.
	revisionPodTemplate(template json.RawMessage) (*corev1.PodTemplateSpec, error)
	// sameTemplate reports whether two of the kind's templates are semantically equal.
	sameTemplate(a, b json.RawMessage) (bool, error)
}

// undoRefuser is a kind undo refuses in some states, before anything is listed.
type undoRefuser interface {
	refuseUndo(ref Ref, obj *unstructured.Unstructured) error
}

// Revisions reads a workload's history, oldest first, with the revision matching the current
// template marked Current. Lists use label selectors only.
func Revisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	h, err := capability[Historian](ref, "has no revision history")
	if err != nil {
		return nil, err
	}
	revs, err := h.revisions(ctx, client, namespace, ref, obj)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(revs, func(i, j int) bool { return revs[i].Number < revs[j].Number })
	if err := markCurrent(ref, obj, revs); err != nil {
		return nil, err
	}
	return revs, nil
}

// podTemplateHistory is the half of a Historian whose template is a pod template (every kind's
// but a UnitedDeployment's, which is a subset template).
type podTemplateHistory struct{}

func (podTemplateHistory) revisionPodTemplate(template json.RawMessage) (*corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	err := json.Unmarshal(template, &t)
	return &t, err
}

func (podTemplateHistory) sameTemplate(a, b json.RawMessage) (bool, error) {
	return semanticallyEqual[corev1.PodTemplateSpec](a, b)
}

// semanticallyEqual decodes a and b as T and compares them as the API machinery does.
func semanticallyEqual[T any](a, b json.RawMessage) (bool, error) {
	var x, y T
	if err := json.Unmarshal(a, &x); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false, err
	}
	return apiequality.Semantic.DeepEqual(x, y), nil
}

// statusString is a string field of obj's status ("" when absent).
func statusString(obj *unstructured.Unstructured, field string) string {
	s, _, _ := unstructured.NestedString(obj.Object, "status", field)
	return s
}

// selectedRevisions lists the ControllerRevisions of obj selected by its spec.selector, as the
// StatefulSet and DaemonSet controllers label them.
func selectedRevisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	sel, err := historySelector(ref, obj)
	if err != nil {
		return nil, err
	}
	return controllerRevisionHistory(ctx, client, namespace, ref, obj, sel)
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

func controllerRevisionHistory(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured, selector string) ([]Revision, error) {
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

// revisionTemplate reads the templates a ControllerRevision holds (revisiondata), the template
// with its keys sorted, as the plugin prints and restores it.
func revisionTemplate(data []byte) (json.RawMessage, map[string]json.RawMessage, error) {
	d, err := revisiondata.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	var tpl any
	if err := json.Unmarshal(d.Template, &tpl); err != nil {
		return nil, nil, err
	}
	sorted, err := json.Marshal(tpl)
	return sorted, d.TemplatePool, err
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
// one its status names) and fills in the images.
func markCurrent(ref Ref, obj *unstructured.Unstructured, revs []Revision) error {
	h, err := capability[Historian](ref, "has no revision history")
	if err != nil {
		return err
	}
	current, err := currentTemplate(obj)
	if err != nil {
		return err
	}
	pool, err := currentTemplatePool(obj)
	if err != nil {
		return err
	}
	found := false
	for i := len(revs) - 1; i >= 0; i-- {
		if same, _ := sameRevision(h, revs[i], current, pool); same {
			revs[i].Current, found = true, true
			break
		}
	}
	if !found {
		name := h.statusRevision(obj, revs)
		for i := range revs {
			if name != "" && revs[i].Name == name {
				revs[i].Current = true
			}
		}
	}
	return withImages(h, revs)
}

// currentTemplate is the object's template in the form its revisions hold.
func currentTemplate(obj *unstructured.Unstructured) (json.RawMessage, error) {
	m, _, err := unstructured.NestedMap(obj.Object, "spec", "template")
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// currentTemplatePool is the object's spec.templatePool (a TApp's, which its revisions cover) in
// the form its revisions hold; nil when it has none.
func currentTemplatePool(obj *unstructured.Unstructured) (map[string]json.RawMessage, error) {
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

// sameRevision reports whether revision r holds the given template and template pool.
func sameRevision(h Historian, r Revision, template json.RawMessage, pool map[string]json.RawMessage) (bool, error) {
	same, err := h.sameTemplate(r.Template, template)
	if err != nil || !same || len(r.TemplatePool) != len(pool) {
		return false, err
	}
	for name, tpl := range pool {
		theirs, ok := r.TemplatePool[name]
		if !ok {
			return false, nil
		}
		if same, err := h.sameTemplate(theirs, tpl); err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// SameTemplate reports whether two templates of a kind (subset templates for a
// UnitedDeployment, pod templates otherwise) are semantically equal.
func SameTemplate(ref Ref, a, b json.RawMessage) (bool, error) {
	h, err := capability[Historian](ref, "has no revision history")
	if err != nil {
		return false, err
	}
	return h.sameTemplate(a, b)
}

// RevisionPodTemplate is the pod template of a revision (inside the subset template for a
// UnitedDeployment).
func RevisionPodTemplate(ref Ref, r Revision) (*corev1.PodTemplateSpec, error) {
	h, err := capability[Historian](ref, "has no revision history")
	if err != nil {
		return nil, err
	}
	return h.revisionPodTemplate(r.Template)
}

// withImages fills in each revision's images: CONTAINER=IMAGE of its pod template, then
// ENTRY/CONTAINER=IMAGE of its template pool.
func withImages(h Historian, revs []Revision) error {
	for i := range revs {
		tpl, err := h.revisionPodTemplate(revs[i].Template)
		if err != nil {
			return fmt.Errorf("revision %d: %w", revs[i].Number, err)
		}
		revs[i].Images = nil
		for _, c := range tpl.Spec.Containers {
			revs[i].Images = append(revs[i].Images, c.Name+"="+c.Image)
		}
		pool, err := poolImages(revs[i].TemplatePool)
		if err != nil {
			return fmt.Errorf("revision %d: %w", revs[i].Number, err)
		}
		revs[i].Images = append(revs[i].Images, pool...)
	}
	return nil
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
	h, err := capability[Historian](ref, "has no revision history")
	if err != nil {
		return Change{}, err
	}
	target, err := undoTarget(ref, revs, toRevision)
	if err != nil {
		return Change{}, err
	}
	if target.Current {
		return Unchanged(ref, "%s: skipped, revision %d is the current template", ref, target.Number), nil
	}
	current, err := currentTemplate(obj)
	if err != nil {
		return Change{}, err
	}
	pool, err := currentTemplatePool(obj)
	if err != nil {
		return Change{}, err
	}
	if same, _ := sameRevision(h, target, current, pool); same {
		return Unchanged(ref, "%s: skipped, the current template already matches revision %d", ref, target.Number), nil
	}
	_, hasPool, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "templatePool")
	ops := []Op{GenerationTest(obj)}
	for _, op := range (revisiondata.Data{Template: target.Template, TemplatePool: target.TemplatePool}).RestoreOps(hasPool) {
		ops = append(ops, Op{Op: op.Op, Path: op.Path, Value: op.Value})
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

// CheckUndoable refuses, before anything is listed, what undo cannot do to the object (a paused
// Deployment, as kubectl rollout undo does).
func CheckUndoable(ref Ref, obj *unstructured.Unstructured) error {
	if r, ok := ref.Kind.helper.(undoRefuser); ok {
		return r.refuseUndo(ref, obj)
	}
	return nil
}
