package cmdtest

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakedynamic "k8s.io/client-go/dynamic/fake"
)

// AssertUnchanged fails the test if the command sent any write (patch, update, create, delete)
// or if any of objs, as stored in the fake cluster after the run, differs from a fresh copy.
// Error cases use it: a refused command must leave the object exactly as it was.
func AssertUnchanged(t *testing.T, res Result, objs []runtime.Object) {
	t.Helper()
	for _, a := range res.Actions {
		verb, _, _ := strings.Cut(a, " ")
		switch verb {
		case "get", "list", "watch":
		default:
			t.Errorf("the command sent a write although it should have changed nothing: %s", a)
		}
	}
	fresh := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(Scheme(), listKinds, copies(objs)...)
	for _, obj := range objs {
		gvks, _, err := Scheme().ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvks[0])
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.Resource(gvr).Namespace(m.GetNamespace()).Get(t.Context(), m.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := res.Client.Resource(gvr).Namespace(m.GetNamespace()).Get(t.Context(), m.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s %s: %v", gvr.Resource, m.GetName(), err)
			continue
		}
		if !reflect.DeepEqual(got.Object, want.Object) {
			t.Errorf("%s %s changed:\n got %v\nwant %v", gvr.Resource, m.GetName(), got.Object, want.Object)
		}
	}
}

func copies(objs []runtime.Object) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopyObject()
	}
	return out
}
