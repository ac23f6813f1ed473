package workload

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func podTemplate(images ...string) corev1.PodTemplateSpec {
	var t corev1.PodTemplateSpec
	for i := 0; i < len(images); i += 2 {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: images[i], Image: images[i+1]})
	}
	return t
}

func TestImageChanges(t *testing.T) {
	ref := Ref{Kind: Deployment, Name: "front"}
	tpl := podTemplate("a", "x:1", "b", "y:1")
	tpl.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "x:1"}}
	changes, err := ImageChanges(ref, "", &tpl, [][2]string{{"*", "x:1"}, {"b", "y:2"}})
	if err != nil {
		t.Fatal(err)
	}
	// "a" and "i" already run x:1 and are left out; "b" gets the later, explicit assignment.
	if len(changes) != 1 || changes[0] != (ImageChange{Index: 1, Name: "b", From: "y:1", To: "y:2"}) {
		t.Errorf("changes %+v", changes)
	}
	_, err = ImageChanges(ref, "", &tpl, [][2]string{{"c", "z:1"}})
	if err == nil || err.Error() != `deploy/front has no container "c": its containers are a, b (init: i)` {
		t.Errorf("unknown container: %v", err)
	}
}

// The strategic merge patch merges containers by name: the other containers and fields stay.
func TestImageStrategicPatchMergesByName(t *testing.T) {
	d := appsv1.Deployment{}
	d.Spec.Template = podTemplate("a", "x:1", "b", "y:1")
	d.Spec.Template.Spec.Containers[1].Args = []string{"--keep"}
	p, err := ImageStrategicPatch([]ImageChange{{Index: 1, Name: "b", From: "y:1", To: "y:2"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"spec":{"template":{"spec":{"containers":[{"image":"y:2","name":"b"}]}}}}`; string(p.Data) != want {
		t.Errorf("patch %s, want %s", p.Data, want)
	}
	orig, _ := json.Marshal(d)
	patched, err := strategicpatch.StrategicMergePatch(orig, p.Data, appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	var got appsv1.Deployment
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Template.Spec.Containers
	if len(c) != 2 || c[0].Image != "x:1" || c[1].Image != "y:2" || len(c[1].Args) != 1 {
		t.Errorf("patched containers %+v", c)
	}
}

// The JSON patch for our kinds tests each container's name at its index: applied to a template
// whose containers were reordered meanwhile, it fails instead of changing the wrong container.
func TestImageOpsTestTheContainerName(t *testing.T) {
	ops := ImageOps([]string{"spec", "canary", "template"}, []ImageChange{{Index: 1, Name: "b", To: "y:2"}})
	p, err := JSONPatch(ops...)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/spec/canary/template/spec/containers/1/name","value":"b"},{"op":"replace","path":"/spec/canary/template/spec/containers/1/image","value":"y:2"}]`
	if string(p.Data) != want {
		t.Errorf("patch %s, want %s", p.Data, want)
	}
	doc := `{"spec":{"canary":{"template":{"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:1"}]}}}}}`
	out, err := applyJSON(t, doc, p)
	if err != nil || !strings.Contains(out, `{"image":"y:2","name":"b"}`) {
		t.Errorf("applied: %s %v", out, err)
	}
	reordered := `{"spec":{"canary":{"template":{"spec":{"containers":[{"name":"b","image":"y:1"},{"name":"a","image":"x:1"}]}}}}}`
	if _, err := applyJSON(t, reordered, p); !IsPreconditionFailure(err) {
		t.Errorf("reordered containers: got %v, want a failed test", err)
	}
}

// A TApp's patch changes only the image: the controller records the history, the plugin
// writes nothing for undo.
func TestSetImageTAppWritesOnlyTheImage(t *testing.T) {
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 7}}
	tapp.Spec.Template = podTemplate("app", "x:1")
	obj := toUnstructured(t, tapp)
	change, err := SetImage(Ref{Kind: TApp, Name: "web"}, obj, "", []string{"app=x:2"})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(obj.Object)
	out, err := applyJSON(t, string(doc), *change.Patch)
	if err != nil {
		t.Fatal(err)
	}
	var after v1alpha1.TApp
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		t.Fatal(err)
	}
	if after.Spec.Template.Spec.Containers[0].Image != "x:2" {
		t.Fatalf("image not changed: %s", out)
	}
	after.Spec.Template.Spec.Containers[0].Image = "x:1"
	if !apiequality.Semantic.DeepEqual(&after, tapp) {
		t.Errorf("the patch changed more than the image: %s", out)
	}
}
