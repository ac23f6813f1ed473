package revisiondata

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
	}
}

// The bytes name the revisions (their hash): these are the bytes agents have always written.
func TestEncodeKeepsTheRecordedBytes(t *testing.T) {
	tapp := &v1alpha1.TAppSpec{Template: podTemplate("web:1")}
	got, err := EncodeTApp(tapp)
	want := `{"spec":{"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"web:1","resources":{}}]}}}}`
	if err != nil || string(got) != want {
		t.Errorf("EncodeTApp = %s %v, want %s", got, err, want)
	}
	tapp.TemplatePool = map[string]corev1.PodTemplateSpec{"blue": podTemplate("web:2")}
	got, _ = EncodeTApp(tapp)
	if want := `"templatePool":{"blue":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"web:2","resources":{}}]}}}}}`; !strings.HasSuffix(string(got), want) {
		t.Errorf("EncodeTApp with a pool = %s, want it to end with %s", got, want)
	}
	sts := podTemplate("db:1")
	ud := &v1alpha1.SubsetTemplate{StatefulSetTemplate: &v1alpha1.StatefulSetTemplateSpec{Spec: appsv1.StatefulSetSpec{Template: sts}}}
	got, err = EncodeUnitedDeployment(ud)
	want = `{"spec":{"template":{"statefulSetTemplate":{"metadata":{},"spec":{"selector":null,"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"db:1","resources":{}}]}},"serviceName":"","updateStrategy":{}}}}}}`
	if err != nil || string(got) != want {
		t.Errorf("EncodeUnitedDeployment = %s %v, want %s", got, err, want)
	}
	got, _ = EncodeNative(&sts)
	if want := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"db:1","name":"web","resources":{}}]}}}}`; string(got) != want {
		t.Errorf("EncodeNative = %s, want %s", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	tpl, blue := podTemplate("web:1"), podTemplate("web:2")
	spec := &v1alpha1.TAppSpec{Template: tpl, TemplatePool: map[string]corev1.PodTemplateSpec{"blue": blue}}
	raw, _ := EncodeTApp(spec)
	d, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.PodTemplate()
	if err != nil || !apiequality.Semantic.DeepEqual(*got, tpl) {
		t.Errorf("TApp template = %+v %v, want %+v", got, err, tpl)
	}
	pool, err := d.Pool()
	if err != nil || len(pool) != 1 || !apiequality.Semantic.DeepEqual(pool["blue"], blue) {
		t.Errorf("TApp pool = %+v %v", pool, err)
	}

	noPool, _ := EncodeTApp(&v1alpha1.TAppSpec{Template: tpl})
	if d, _ := Decode(noPool); d.TemplatePool != nil {
		t.Errorf("a TApp without a pool decodes with pool %v", d.TemplatePool)
	}

	ud := &v1alpha1.SubsetTemplate{TAppTemplate: &v1alpha1.TAppTemplateSpec{Spec: v1alpha1.TAppSpec{Template: tpl}}}
	raw, _ = EncodeUnitedDeployment(ud)
	d, _ = Decode(raw)
	st, err := d.SubsetTemplate()
	if err != nil || !apiequality.Semantic.DeepEqual(st, ud) {
		t.Errorf("subset template = %+v %v, want %+v", st, err, ud)
	}

	raw, _ = EncodeNative(&tpl)
	d, _ = Decode(raw)
	if strings.Contains(string(d.Template), "$patch") {
		t.Errorf("the directive is kept: %s", d.Template)
	}
	if !RecordsPodTemplate(raw, &tpl) || RecordsPodTemplate(raw, &blue) {
		t.Error("RecordsPodTemplate does not tell the recorded template from another")
	}
}

// Agent-written templates come back byte for byte, so a restore writes what was recorded.
func TestDecodeKeepsAgentBytes(t *testing.T) {
	raw := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:1"}]}}}}`)
	d, err := Decode(raw)
	if err != nil || string(d.Template) != `{"spec":{"containers":[{"name":"web","image":"web:1"}]}}` {
		t.Errorf("Decode = %s %v", d.Template, err)
	}
}

func TestDecodeRefusesMalformedData(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{`not json`, "its data is not a spec.template patch"},
		{`{"spec":{}}`, "its data holds no spec.template"},
		{`{"other":true}`, "its data holds no spec.template"},
		{`{"spec":{"template":null}}`, "its data holds no spec.template"},
		{`{"spec":{"template":"x"}}`, "its spec.template is not an object"},
		{`{"spec":{"template":{},"templatePool":[1]}}`, "its data is not a spec.template patch"},
	} {
		_, err := Decode([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%s) = %v, want an error saying %q", c.data, err, c.want)
		}
	}
	if _, err := NativeRestorePatch([]byte(`{"spec":{}}`)); err == nil {
		t.Error("NativeRestorePatch accepted data without a template")
	}
	if RecordsPodTemplate([]byte(`{`), &corev1.PodTemplateSpec{}) {
		t.Error("unreadable data records a template")
	}
	d := Data{Template: json.RawMessage(`{"spec":{"containers":"x"}}`), TemplatePool: map[string]json.RawMessage{"blue": json.RawMessage(`[]`)}}
	if _, err := d.PodTemplate(); err == nil || !strings.Contains(err.Error(), "not a pod template") {
		t.Errorf("PodTemplate of a bad template = %v", err)
	}
	if _, err := (Data{Template: json.RawMessage(`{"statefulSetTemplate":"x"}`)}).SubsetTemplate(); err == nil || !strings.Contains(err.Error(), "not a UnitedDeployment's subset template") {
		t.Errorf("SubsetTemplate of a bad template = %v", err)
	}
	if _, err := d.Pool(); err == nil || !strings.Contains(err.Error(), "templatePool entry blue") {
		t.Errorf("Pool of a bad pool = %v", err)
	}
}

func TestRestorePatch(t *testing.T) {
	tpl := `{"spec":{"containers":[{"name":"web","image":"web:1"}]}}`
	d := Data{Template: json.RawMessage(tpl)}
	for _, c := range []struct {
		name    string
		d       Data
		hasPool bool
		want    string
	}{
		{"template only", d, false, `[{"op":"replace","path":"/spec/template","value":` + tpl + `}]`},
		{"the workload's pool removed", d, true, `[{"op":"replace","path":"/spec/template","value":` + tpl + `},{"op":"remove","path":"/spec/templatePool"}]`},
		{"the recorded pool put back", Data{Template: d.Template, TemplatePool: map[string]json.RawMessage{"b": json.RawMessage(tpl), "a": json.RawMessage(tpl)}}, true,
			`[{"op":"replace","path":"/spec/template","value":` + tpl + `},{"op":"add","path":"/spec/templatePool","value":{"a":` + tpl + `,"b":` + tpl + `}}]`},
	} {
		got, err := c.d.RestorePatch(c.hasPool)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: RestorePatch = %s %v, want %s", c.name, got, err, c.want)
		}
	}
	native := []byte(`{"spec":{"template":{"$patch":"replace","spec":{}}}}`)
	if got, err := NativeRestorePatch(native); err != nil || string(got) != string(native) {
		t.Errorf("NativeRestorePatch = %s %v, want the data as recorded", got, err)
	}
}
