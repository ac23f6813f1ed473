package workload

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestRevisionTemplate(t *testing.T) {
	// The StatefulSet controller's form, with "$patch":"replace" inside the template.
	got, pool, err := revisionTemplate([]byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"image":"i","name":"c"}]}}`; string(got) != want || pool != nil {
		t.Errorf("got %s and pool %s, want %s and no pool", got, pool, want)
	}
	// The TApp controller's form, with spec.templatePool beside spec.template.
	_, pool, err = revisionTemplate([]byte(`{"spec":{"template":{"spec":{}},"templatePool":{"blue":{"spec":{"containers":[{"name":"c","image":"b"}]}}}}}`))
	if err != nil || string(pool["blue"]) != `{"spec":{"containers":[{"name":"c","image":"b"}]}}` {
		t.Errorf("templatePool %s, %v", pool, err)
	}
	if _, _, err := revisionTemplate([]byte(`{"other":1}`)); err == nil {
		t.Error("data without spec.template accepted")
	}
}

func TestSameTemplate(t *testing.T) {
	ref := Ref{Kind: Deployment, Name: "d"}
	// Key order and absent-versus-empty fields do not matter.
	same, err := SameTemplate(ref, json.RawMessage(`{"spec":{"containers":[{"name":"c","image":"i"}]}}`), json.RawMessage(`{"metadata":{},"spec":{"containers":[{"image":"i","name":"c"}]}}`))
	if err != nil || !same {
		t.Errorf("equal templates: %v %v", same, err)
	}
	same, _ = SameTemplate(ref, json.RawMessage(`{"spec":{"containers":[{"name":"c","image":"i"}]}}`), json.RawMessage(`{"spec":{"containers":[{"name":"c","image":"j"}]}}`))
	if same {
		t.Error("different images reported the same")
	}
}

func testTApp(t *testing.T) *v1alpha1.TApp {
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 3}}
	tapp.Spec.Template = podTemplate("app", "x:2")
	tapp.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"blue": podTemplate("app", "b:2")}
	return tapp
}

// tappRevisions are the revisions the controller recorded for testTApp: x:1 with pool entry
// blue on b:1, then the current x:2 with blue on b:2.
func tappRevisions(t *testing.T) []Revision {
	raw := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return []Revision{
		{Number: 1, Name: "web-1", Template: raw(podTemplate("app", "x:1")), TemplatePool: map[string]json.RawMessage{"blue": raw(podTemplate("app", "b:1"))}},
		{Number: 2, Name: "web-2", Template: raw(podTemplate("app", "x:2")), TemplatePool: map[string]json.RawMessage{"blue": raw(podTemplate("app", "b:2"))}},
	}
}

// Undo of a TApp restores spec.template and spec.templatePool of the revision, and fails as a
// whole if the spec changed since it was read.
func TestUndoTApp(t *testing.T) {
	ref := Ref{Kind: TApp, Name: "web"}
	obj := toUnstructured(t, testTApp(t))
	revs := tappRevisions(t)
	if err := markCurrent(ref, obj, revs); err != nil || revs[0].Current || !revs[1].Current ||
		strings.Join(revs[0].Images, ",") != "app=x:1,blue/app=b:1" {
		t.Fatalf("revisions %+v %v", revs, err)
	}
	change, err := Undo(ref, obj, revs, 0)
	if err != nil || change.Patch == nil {
		t.Fatalf("%+v %v", change, err)
	}
	doc, _ := json.Marshal(obj.Object)
	once, err := applyJSON(t, string(doc), *change.Patch)
	if err != nil {
		t.Fatal(err)
	}
	var after v1alpha1.TApp
	if err := json.Unmarshal([]byte(once), &after); err != nil {
		t.Fatal(err)
	}
	if after.Spec.Template.Spec.Containers[0].Image != "x:1" || after.Spec.TemplatePool["blue"].Spec.Containers[0].Image != "b:1" {
		t.Errorf("after undo: %s", once)
	}
	// A revision without a templatePool removes it.
	revs[0].TemplatePool = nil
	change, _ = Undo(ref, obj, revs, 1)
	if once, err = applyJSON(t, string(doc), *change.Patch); err != nil || strings.Contains(once, "templatePool") {
		t.Errorf("undo to a revision without templatePool: %s %v", once, err)
	}
	// The patch, sent after someone else changed the spec, changes nothing.
	bumped := strings.Replace(string(doc), `"generation":3`, `"generation":4`, 1)
	if _, err := applyJSON(t, bumped, *change.Patch); !IsPreconditionFailure(err) {
		t.Errorf("undo after a concurrent change: got %v, want a failed test", err)
	}
}

func TestUndoSkipsTheCurrentTemplate(t *testing.T) {
	ref := Ref{Kind: TApp, Name: "web"}
	tapp := testTApp(t)
	// Someone already went back by hand; the controller has not recorded it yet.
	tapp.Spec.Template = podTemplate("app", "x:1")
	tapp.Spec.TemplatePool["blue"] = podTemplate("app", "b:1")
	obj := toUnstructured(t, tapp)
	revs := tappRevisions(t)
	change, err := Undo(ref, obj, revs, 1)
	if err != nil || change.Patch != nil || !strings.Contains(change.Line, "skipped") {
		t.Errorf("%+v %v", change, err)
	}
	// The same spec.template with another templatePool is another revision.
	tapp.Spec.TemplatePool["blue"] = podTemplate("app", "b:3")
	change, err = Undo(ref, toUnstructured(t, tapp), revs, 1)
	if err != nil || change.Patch == nil {
		t.Errorf("templatePool differs: %+v %v", change, err)
	}
}
