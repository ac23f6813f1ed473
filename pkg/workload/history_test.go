package workload

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestRevisionTemplate(t *testing.T) {
	// The StatefulSet controller's form, with "$patch":"replace" inside the template.
	got, err := revisionTemplate([]byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"image":"i","name":"c"}]}}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := revisionTemplate([]byte(`{"other":1}`)); err == nil {
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
	prev, _ := json.Marshal(podTemplate("app", "x:1"))
	value, _ := json.Marshal(PreviousTemplate{Template: prev})
	tapp.Annotations = map[string]string{AnnotationPreviousTemplate: string(value)}
	return tapp
}

// Undo of a TApp restores the recorded template, records the replaced one (so a second undo
// goes back again), and fails as a whole if the spec changed since it was read.
func TestUndoTApp(t *testing.T) {
	ref := Ref{Kind: TApp, Name: "web"}
	obj := toUnstructured(t, testTApp(t))
	revs, err := Revisions(t.Context(), nil, "", ref, obj)
	if err != nil || len(revs) != 2 || revs[0].Current || !revs[1].Current || revs[0].Images[0] != "app=x:1" {
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
	if after.Spec.Template.Spec.Containers[0].Image != "x:1" || !strings.Contains(after.Annotations[AnnotationPreviousTemplate], `x:2`) {
		t.Errorf("after undo: %s", once)
	}
	// Undo again: back to x:2.
	after.Generation++
	again := toUnstructured(t, &after)
	revs, _ = Revisions(t.Context(), nil, "", ref, again)
	change2, err := Undo(ref, again, revs, 0)
	if err != nil || change2.Patch == nil || !strings.Contains(string(change2.Patch.Data), `"image":"x:2"`) {
		t.Errorf("second undo: %+v %v", change2, err)
	}
	// The first patch, sent after someone else changed the spec, changes nothing.
	bumped := strings.Replace(string(doc), `"generation":3`, `"generation":4`, 1)
	if _, err := applyJSON(t, bumped, *change.Patch); !IsPreconditionFailure(err) {
		t.Errorf("undo after a concurrent change: got %v, want a failed test", err)
	}
}

func TestUndoSkipsTheCurrentTemplate(t *testing.T) {
	ref := Ref{Kind: TApp, Name: "web"}
	tapp := testTApp(t)
	tapp.Spec.Template = podTemplate("app", "x:1") // someone already went back by hand
	obj := toUnstructured(t, tapp)
	revs, _ := Revisions(t.Context(), nil, "", ref, obj)
	change, err := Undo(ref, obj, revs, 0)
	if err != nil || change.Patch != nil || !strings.Contains(change.Line, "skipped") {
		t.Errorf("%+v %v", change, err)
	}
}
