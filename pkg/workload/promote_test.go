package workload

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// applyJSON applies a JSON patch the way the API server does (same library, same version).
func applyJSON(t *testing.T, doc string, p Patch) (string, error) {
	t.Helper()
	if p.Type != "application/json-patch+json" {
		t.Fatalf("patch type %s, want a JSON patch", p.Type)
	}
	decoded, err := jsonpatch.DecodePatch(p.Data)
	if err != nil {
		t.Fatalf("not a JSON patch: %s: %v", p.Data, err)
	}
	out, err := decoded.Apply([]byte(doc))
	return string(out), err
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestApproveBatchPatch(t *testing.T) {
	tests := []struct {
		current int64
		present bool
		batch   int32
		want    string
	}{
		{0, false, 1, `[{"op":"test","path":"/spec/approvedBatch","value":null},{"op":"add","path":"/spec/approvedBatch","value":1}]`},
		{0, true, 1, `[{"op":"test","path":"/spec/approvedBatch","value":0},{"op":"replace","path":"/spec/approvedBatch","value":1}]`},
		{2, true, 5, `[{"op":"test","path":"/spec/approvedBatch","value":2},{"op":"replace","path":"/spec/approvedBatch","value":5}]`},
	}
	for _, tt := range tests {
		p, err := ApproveBatchPatch(tt.current, tt.present, tt.batch)
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Data) != tt.want {
			t.Errorf("ApproveBatchPatch(%d, %v, %d) = %s, want %s", tt.current, tt.present, tt.batch, p.Data, tt.want)
		}
	}
}

// The precondition works with the API server's JSON patch library: the first of two identical
// promotes applies, the second fails its test, whether the field was present or absent.
func TestApproveBatchPatchAppliesOnce(t *testing.T) {
	for _, doc := range []string{`{"spec":{"replicas":10}}`, `{"spec":{"replicas":10,"approvedBatch":0}}`} {
		var parsed map[string]map[string]interface{}
		if err := json.Unmarshal([]byte(doc), &parsed); err != nil {
			t.Fatal(err)
		}
		v, present := parsed["spec"]["approvedBatch"]
		cur, _ := v.(float64)
		p, err := ApproveBatchPatch(int64(cur), present, 1)
		if err != nil {
			t.Fatal(err)
		}
		once, err := applyJSON(t, doc, p)
		if err != nil {
			t.Fatalf("first promote on %s: %v", doc, err)
		}
		if !strings.Contains(once, `"approvedBatch":1`) {
			t.Errorf("after the first promote: %s", once)
		}
		if _, err := applyJSON(t, once, p); err == nil || !IsPreconditionFailure(err) {
			t.Errorf("second identical promote on %s: got %v, want a failed test", once, err)
		}
	}
	// A lower approval never overwrites a higher one (a --full that landed first).
	p, _ := ApproveBatchPatch(1, true, 2)
	if _, err := applyJSON(t, `{"spec":{"approvedBatch":4}}`, p); !IsPreconditionFailure(err) {
		t.Errorf("got %v, want a failed test", err)
	}
}

func testCanary(approved, current int32, state v1alpha1.BatchState, phase v1alpha1.CanaryPhase) *v1alpha1.Canary {
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout"}}
	c.Spec.Batches = ptr.To[int32](3)
	c.Spec.ApprovedBatch = approved
	c.Status.Phase = phase
	c.Status.CurrentBatch = current
	for i := int32(1); i <= 3; i++ {
		b := v1alpha1.CanaryBatchStatus{Index: i, State: v1alpha1.BatchPending}
		if i < current {
			b.State = v1alpha1.BatchCompleted
		} else if i == current {
			b.State = state
		}
		c.Status.Batches = append(c.Status.Batches, b)
	}
	return c
}

func TestPromoteCanary(t *testing.T) {
	ref := Ref{Kind: Canary, Name: "checkout"}
	tests := []struct {
		name      string
		c         *v1alpha1.Canary
		full      bool
		wantBatch int32
		wantPatch string // "" for no patch
		wantErr   string
	}{
		{"paused at 1", testCanary(0, 1, v1alpha1.BatchPaused, v1alpha1.CanaryPaused), false, 1,
			`[{"op":"test","path":"/spec/approvedBatch","value":null},{"op":"add","path":"/spec/approvedBatch","value":1}]`, ""},
		{"paused at 2", testCanary(1, 2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused), false, 2,
			`[{"op":"test","path":"/spec/approvedBatch","value":1},{"op":"replace","path":"/spec/approvedBatch","value":2}]`, ""},
		{"full", testCanary(1, 2, v1alpha1.BatchUpgrading, v1alpha1.CanaryProgressing), true, 3,
			`[{"op":"test","path":"/spec/approvedBatch","value":1},{"op":"replace","path":"/spec/approvedBatch","value":3}]`, ""},
		{"already approved", testCanary(2, 2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused), false, 0, "", ""},
		{"full already", testCanary(3, 2, v1alpha1.BatchUpgrading, v1alpha1.CanaryProgressing), true, 0, "", ""},
		{"progressing", testCanary(0, 2, v1alpha1.BatchUpgrading, v1alpha1.CanaryProgressing), false, 0, "", "is not paused at a batch"},
		{"not started", testCanary(0, 0, v1alpha1.BatchPending, ""), false, 0, "", "not yet observed by the agent"},
	}
	rollingBack := testCanary(1, 2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused)
	rollingBack.Spec.Rollback = true
	tests = append(tests, struct {
		name      string
		c         *v1alpha1.Canary
		full      bool
		wantBatch int32
		wantPatch string
		wantErr   string
	}{"rolling back", rollingBack, true, 0, "", "rolling back"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			change, batch, err := PromoteCanary(ref, toUnstructured(t, tt.c), tt.full)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if batch != tt.wantBatch {
				t.Errorf("batch %d, want %d", batch, tt.wantBatch)
			}
			switch {
			case tt.wantPatch == "" && change.Patch != nil:
				t.Errorf("patch %s, want none", change.Patch.Data)
			case tt.wantPatch != "" && (change.Patch == nil || string(change.Patch.Data) != tt.wantPatch):
				t.Errorf("patch %v, want %s", change.Patch, tt.wantPatch)
			}
			if !strings.HasPrefix(change.Line, "canary/checkout") {
				t.Errorf("line %q does not name the object", change.Line)
			}
		})
	}
}

func TestPromoteSubsets(t *testing.T) {
	ud := &v1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "orders"}}
	for _, z := range []string{"a", "b", "c"} {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, v1alpha1.Subset{Name: z})
	}
	ud.Spec.UpdateStrategy.ManualUpdate = &v1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 2, "b": 0}}
	ref := Ref{Kind: UnitedDeployment, Name: "orders"}
	obj := toUnstructured(t, ud)

	change, err := PromoteSubsets(ref, obj, nil, true)
	if err != nil || change.Patch == nil || string(change.Patch.Data) != `{"spec":{"updateStrategy":{"manualUpdate":{"partitions":{"a":0}}}}}` {
		t.Errorf("--all: %v %v", change.Patch, err)
	}
	if change, err := PromoteSubsets(ref, obj, []string{"b", "c"}, false); err != nil || change.Patch != nil {
		t.Errorf("subsets already at 0: %+v %v", change, err)
	}
	if _, err := PromoteSubsets(ref, obj, []string{"a", "zz"}, false); err == nil || err.Error() != `ud/orders has no subset "zz": its subsets are a, b, c` {
		t.Errorf("unknown subset: %v", err)
	}
}

func TestPointerAndJSONPatch(t *testing.T) {
	if got := Pointer("metadata", "annotations", "a.b/c~d"); got != "/metadata/annotations/a.b~1c~0d" {
		t.Errorf("Pointer = %s", got)
	}
	p, err := JSONPatch(Remove("/spec/statuses/3"), Test("/a", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"op":"remove","path":"/spec/statuses/3"},{"op":"test","path":"/a","value":"x"}]`; string(p.Data) != want {
		t.Errorf("JSONPatch = %s, want %s", p.Data, want)
	}
}

// How the API server answers a JSON patch whose test fails: a bare 422 without causes. A
// validation error is a 422 too, but says what is invalid: it is not a precondition failure.
func TestIsPreconditionFailureOnAPIServerErrors(t *testing.T) {
	failedTest := apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "testing value /spec/approvedBatch failed: test failed", 0, false)
	if !IsPreconditionFailure(failedTest) {
		t.Errorf("%v not recognized", failedTest)
	}
	if !IsPreconditionFailure(fmt.Errorf("wrapped: %w", failedTest)) {
		t.Error("a wrapped 422 not recognized")
	}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps.workload.dev", Kind: "Canary"}, "checkout", field.ErrorList{field.Invalid(field.NewPath("spec", "approvedBatch"), -1, "must be >= 0")})
	if IsPreconditionFailure(invalid) {
		t.Errorf("validation error %v taken for a precondition failure", invalid)
	}
	if !IsPreconditionFailure(apierrors.NewConflict(schema.GroupResource{Resource: "canaries"}, "checkout", fmt.Errorf("modified"))) {
		t.Error("conflict not recognized")
	}
	if IsPreconditionFailure(apierrors.NewForbidden(schema.GroupResource{Resource: "canaries"}, "checkout", fmt.Errorf("no"))) {
		t.Error("forbidden taken for a precondition failure")
	}
}
