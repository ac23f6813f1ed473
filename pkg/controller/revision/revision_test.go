package revision

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

var parentKind = schema.GroupVersionKind{Group: "apps.workload.dev", Version: "v1alpha1", Kind: "UnitedDeployment"}

func parent() *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}
}

func TestHash(t *testing.T) {
	a, b := []byte(`{"a":1}`), []byte(`{"a":2}`)
	if Hash(a, nil) != Hash(a, nil) {
		t.Fatal("hash is not stable")
	}
	zero := int32(0)
	if Hash(a, nil) != Hash(a, &zero) {
		t.Fatal("a nil collision count must hash as 0")
	}
	if Hash(a, nil) == Hash(b, nil) {
		t.Fatal("different data, same hash")
	}
	one := int32(1)
	if Hash(a, nil) == Hash(a, &one) {
		t.Fatal("the collision count must change the hash")
	}
}

func TestNew(t *testing.T) {
	p := parent()
	r := New(p, parentKind, map[string]string{"x": "y"}, []byte(`{"a":1}`), 3, nil)
	if r.Name != "web-"+Hash([]byte(`{"a":1}`), nil) || r.Labels[HashLabel] != Hash([]byte(`{"a":1}`), nil) || r.Labels["x"] != "y" {
		t.Fatalf("name/labels: %s %v", r.Name, r.Labels)
	}
	if r.Revision != 3 || r.Namespace != "ns" || !metav1.IsControlledBy(r, p) {
		t.Fatalf("revision %d, namespace %q, owners %v", r.Revision, r.Namespace, r.OwnerReferences)
	}
}

func TestCreateResolvesCollision(t *testing.T) {
	p := parent()
	data := []byte(`{"a":1}`)
	var cc int32
	taken := New(p, parentKind, nil, []byte(`{"other":true}`), 1, nil)
	taken.Name = Name("web", Hash(data, &cc)) // same name, other data: a collision
	client := fake.NewClientset(taken)
	h := History{Client: client}

	got, err := h.Create(context.Background(), p, New(p, parentKind, nil, data, 2, &cc), &cc)
	if err != nil {
		t.Fatal(err)
	}
	if cc != 1 {
		t.Fatalf("collision count %d, want 1", cc)
	}
	if got.Name != Name("web", Hash(data, &cc)) || string(got.Data.Raw) != string(data) {
		t.Fatalf("created %s with %s", got.Name, got.Data.Raw)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if want := []string{"create", "get", "create"}; !equalStrings(verbs, want) {
		t.Fatalf("actions %v, want %v", verbs, want)
	}
}

func TestCreateReusesEqualRevision(t *testing.T) {
	p := parent()
	data := []byte(`{"a":1}`)
	var cc int32
	existing := New(p, parentKind, nil, data, 1, &cc)
	client := fake.NewClientset(existing)
	got, err := History{Client: client}.Create(context.Background(), p, New(p, parentKind, nil, data, 2, &cc), &cc)
	if err != nil {
		t.Fatal(err)
	}
	if cc != 0 || got.Name != existing.Name || got.Revision != 1 {
		t.Fatalf("got %s rev %d, collisions %d", got.Name, got.Revision, cc)
	}
}

// A revision an older agent wrote without the managed-by label is invisible to the filtered
// informer: Create meets it as AlreadyExists and labels it, once.
func TestCreateLabelsUnlabelledEqualRevision(t *testing.T) {
	p := parent()
	data := []byte(`{"a":1}`)
	var cc int32
	old := New(p, parentKind, map[string]string{"ud": "web"}, data, 1, &cc)
	client := fake.NewClientset(old)
	want := map[string]string{"ud": "web", "app.kubernetes.io/managed-by": "workload-agent"}
	h := History{Client: client}
	got, err := h.Create(context.Background(), p, New(p, parentKind, want, data, 2, &cc), &cc)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != old.Name || got.Labels["app.kubernetes.io/managed-by"] != "workload-agent" || got.Labels["ud"] != "web" || got.Labels[HashLabel] == "" {
		t.Fatalf("got %s labels %v", got.Name, got.Labels)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if want := []string{"create", "get", "patch"}; !equalStrings(verbs, want) {
		t.Fatalf("actions %v, want %v", verbs, want)
	}
	// Labelled now: meeting it again writes nothing more.
	client.ClearActions()
	if _, err := h.Create(context.Background(), p, New(p, parentKind, want, data, 2, &cc), &cc); err != nil {
		t.Fatal(err)
	}
	verbs = nil
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if want := []string{"create", "get"}; !equalStrings(verbs, want) {
		t.Fatalf("second create: actions %v, want %v", verbs, want)
	}
}

func TestRenumber(t *testing.T) {
	p := parent()
	r := New(p, parentKind, nil, []byte(`{}`), 1, nil)
	client := fake.NewClientset(r)
	h := History{Client: client}
	if _, err := h.Renumber(context.Background(), r, 1); err != nil || len(client.Actions()) != 0 {
		t.Fatalf("renumbering to the same number wrote: %v %v", err, client.Actions())
	}
	got, err := h.Renumber(context.Background(), r, 5)
	if err != nil || got.Revision != 5 {
		t.Fatalf("got %v, %v", got, err)
	}
	if a := client.Actions(); len(a) != 1 || !a[0].Matches("update", "controllerrevisions") {
		t.Fatalf("actions %v", a)
	}
	if r.Revision != 1 {
		t.Fatal("Renumber mutated its argument")
	}
}

func TestDeleteIsGuardedByUID(t *testing.T) {
	r := New(parent(), parentKind, nil, []byte(`{}`), 1, nil)
	r.UID = "rev-uid"
	client := fake.NewClientset()
	if err := (History{Client: client}).Delete(context.Background(), r); err != nil {
		t.Fatalf("deleting a missing revision: %v", err)
	}
	a := client.Actions()[0].(core.DeleteActionImpl)
	if a.DeleteOptions.Preconditions == nil || *a.DeleteOptions.Preconditions.UID != "rev-uid" {
		t.Fatalf("delete options %+v", a.DeleteOptions)
	}
}

func rev(name string, n int64) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: n}
}

func TestExcessKeepsLiveRevisions(t *testing.T) {
	revs := []*appsv1.ControllerRevision{rev("r5", 5), rev("r1", 1), rev("r3", 3), rev("r2", 2), rev("r4", 4), rev("r6", 6)}
	tests := []struct {
		live  []string
		limit int
		want  []string
	}{
		{[]string{"r6"}, 10, nil},
		{[]string{"r6"}, 5, nil},
		{[]string{"r6"}, 2, []string{"r1", "r2", "r3"}},
		// The current revision is the oldest: it stays, the next oldest go.
		{[]string{"r1", "r6"}, 2, []string{"r2", "r3"}},
		{[]string{"r1", "r6"}, 0, []string{"r2", "r3", "r4", "r5"}},
		{[]string{"r1", "r6"}, -1, []string{"r2", "r3", "r4", "r5"}},
	}
	for _, tt := range tests {
		var got []string
		for _, r := range Excess(revs, sets.New(tt.live...), tt.limit) {
			got = append(got, r.Name)
		}
		if !equalStrings(got, tt.want) {
			t.Errorf("live %v limit %d: got %v, want %v", tt.live, tt.limit, got, tt.want)
		}
	}
}

func TestSortAndNext(t *testing.T) {
	revs := []*appsv1.ControllerRevision{rev("b", 2), rev("c", 1), rev("a", 2)}
	Sort(revs)
	if revs[0].Name != "c" || revs[1].Name != "a" || revs[2].Name != "b" {
		t.Fatalf("order %s %s %s", revs[0].Name, revs[1].Name, revs[2].Name)
	}
	if Next(revs) != 3 || Next(nil) != 1 {
		t.Fatalf("next %d %d", Next(revs), Next(nil))
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPlanUpdate(t *testing.T) {
	p := parent()
	a := New(p, parentKind, nil, []byte(`{"a":1}`), 1, nil)
	b := New(p, parentKind, nil, []byte(`{"b":1}`), 2, nil)
	history := []*appsv1.ControllerRevision{a, b}
	if s := PlanUpdate(history, New(p, parentKind, nil, []byte(`{"b":1}`), 3, nil)); s.Existing != b || s.Number != 2 {
		t.Fatalf("unchanged template: %+v", s)
	}
	if s := PlanUpdate(history, New(p, parentKind, nil, []byte(`{"a":1}`), 3, nil)); s.Existing != a || s.Number != 3 {
		t.Fatalf("template back to revision 1: %+v", s)
	}
	if s := PlanUpdate(history, New(p, parentKind, nil, []byte(`{"c":1}`), 3, nil)); s.Existing != nil || s.Number != 3 {
		t.Fatalf("new template: %+v", s)
	}
	if s := PlanUpdate(nil, New(p, parentKind, nil, []byte(`{"c":1}`), 1, nil)); s.Existing != nil {
		t.Fatalf("no history: %+v", s)
	}
}

func TestApply(t *testing.T) {
	p := parent()
	a := New(p, parentKind, nil, []byte(`{"a":1}`), 1, nil)
	client := fake.NewClientset(a)
	h := History{Client: client}
	var cc int32
	if _, err := h.Apply(context.Background(), p, Step{Existing: a, Number: 1}, &cc); err != nil || len(client.Actions()) != 0 {
		t.Fatalf("keeping the newest revision wrote: %v %v", err, client.Actions())
	}
	got, err := h.Apply(context.Background(), p, Step{Existing: a, Number: 2}, &cc)
	if err != nil || got.Revision != 2 {
		t.Fatalf("renumber: %v %v", got, err)
	}
	got, err = h.Apply(context.Background(), p, Step{Candidate: New(p, parentKind, nil, []byte(`{"b":1}`), 3, &cc), Number: 3}, &cc)
	if err != nil || got.Revision != 3 || Find([]*appsv1.ControllerRevision{a, got}, got.Name) != got {
		t.Fatalf("create: %v %v", got, err)
	}
}

// ListOwned keeps the selected revisions the parent controls: not another parent's of the same
// name (another UID), not one the selector leaves out.
func TestListOwned(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	labelled := map[string]string{"app": "web"}
	mine := New(parent(), parentKind, labelled, []byte(`{"a":1}`), 1, nil)
	old := parent()
	old.UID = "uid-0"
	theirs := New(old, parentKind, labelled, []byte(`{"a":2}`), 2, nil)
	unlabelled := New(parent(), parentKind, map[string]string{"app": "other"}, []byte(`{"a":3}`), 3, nil)
	for _, r := range []*appsv1.ControllerRevision{mine, theirs, unlabelled} {
		if err := indexer.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ListOwned(appslisters.NewControllerRevisionLister(indexer), parent(), labels.SelectorFromSet(labelled))
	if err != nil || len(got) != 1 || got[0].Name != mine.Name {
		t.Errorf("ListOwned = %v %v, want only %s", got, err, mine.Name)
	}
}
