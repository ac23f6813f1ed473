package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// Patch is what a mutating verb sends: a patch type and its body.
type Patch struct {
	Type types.PatchType
	Data []byte
}

// String names the patch as the dry-run line shows it: "the json patch [...]".
func (p Patch) String() string {
	return fmt.Sprintf("the %s patch %s", PatchTypeName(p.Type), p.Data)
}

// PatchTypeName is the short name of a patch type: merge, json or strategic.
func PatchTypeName(t types.PatchType) string {
	switch t {
	case types.MergePatchType:
		return "merge"
	case types.JSONPatchType:
		return "json"
	case types.StrategicMergePatchType:
		return "strategic merge"
	}
	return string(t)
}

// MergePatch is the JSON merge patch that sets one field: {"a":{"b":value}}.
func MergePatch(path []string, value interface{}) (Patch, error) {
	data, err := mergePatch(path, value)
	return Patch{Type: types.MergePatchType, Data: data}, err
}

// Op is one operation of a JSON patch (RFC 6902).
type Op struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	// Value is always sent, even when nil: {"op":"test","value":null} asserts that a member is
	// absent (the API server's JSON patch treats a missing member as null).
	Value interface{} `json:"value"`
}

// opNoValue is how a "remove" op is written: it has no value.
type opNoValue struct {
	Op   string `json:"op"`
	Path string `json:"path"`
}

// Test, Add, Replace and Remove build the JSON patch operations.
func Test(path string, value interface{}) Op    { return Op{Op: "test", Path: path, Value: value} }
func Add(path string, value interface{}) Op     { return Op{Op: "add", Path: path, Value: value} }
func Replace(path string, value interface{}) Op { return Op{Op: "replace", Path: path, Value: value} }
func Remove(path string) Op                     { return Op{Op: "remove", Path: path} }

// JSONPatch renders operations as a JSON patch.
func JSONPatch(ops ...Op) (Patch, error) {
	out := make([]interface{}, len(ops))
	for i, op := range ops {
		if op.Op == "remove" {
			out[i] = opNoValue{Op: op.Op, Path: op.Path}
		} else {
			out[i] = op
		}
	}
	data, err := json.Marshal(out)
	return Patch{Type: types.JSONPatchType, Data: data}, err
}

// Pointer builds a JSON pointer (RFC 6901) from path segments, escaping "~" and "/".
func Pointer(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}

// ErrPrecondition is returned by Send when the object changed after it was read in a way the
// patch's precondition ("test" op, removal of a member, resourceVersion) guards against. Nothing
// was changed.
var ErrPrecondition = errors.New("the object changed after it was read")

// Send sends a patch to the object ref names, or only describes it under --dry-run=client
// (it then returns false). Errors name the object. Under --dry-run=server it asks the API server
// to validate the patch without persisting it.
func Send(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, p Patch, dryRun cmdutil.DryRunStrategy) (sent bool, err error) {
	if dryRun == cmdutil.DryRunClient {
		return false, nil
	}
	opts := metav1.PatchOptions{}
	if dryRun == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = client.Resource(ref.Kind.Resource).Namespace(namespace).Patch(ctx, ref.Name, p.Type, p.Data, opts)
	switch {
	case err == nil:
		return true, nil
	case IsPreconditionFailure(err):
		return false, fmt.Errorf("%s changed while the command ran (%w); nothing was changed: check it and run the command again", ref, ErrPrecondition)
	case apierrors.IsNotFound(err):
		return false, fmt.Errorf("%s not found in namespace %q", ref, namespace)
	}
	return false, fmt.Errorf("%s: %w", ref, err)
}

// IsPreconditionFailure reports whether a patch failed on its precondition: a failed JSON patch
// "test", the removal or replacement of a member that is gone, or a resourceVersion conflict.
//
// The API server answers a JSON patch it cannot apply with a bare 422: reason Invalid, the
// generic message below and no causes (the library's reason, such as "testing value
// /spec/approvedBatch failed", is not sent). A validation failure is also a 422 but always
// says what is invalid. Fake clients return the library's error itself.
func IsPreconditionFailure(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsConflict(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return s.Code == http.StatusUnprocessableEntity && s.Message == jsonPatchNotApplicable &&
			(s.Details == nil || len(s.Details.Causes) == 0)
	}
	msg := err.Error()
	for _, m := range []string{"test failed", "nonexistent key", "missing path", "missing key"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// jsonPatchNotApplicable is the message of the API server's answer to a JSON patch whose
// operations cannot be applied to the object.
const jsonPatchNotApplicable = "the server rejected our request due to an error in our request"

// DryRunNote is what a confirmation line says about the dry-run mode: "" when the patch was
// really sent.
func DryRunNote(p Patch, dryRun cmdutil.DryRunStrategy) string {
	switch dryRun {
	case cmdutil.DryRunClient:
		return fmt.Sprintf(" (dry run: would send %s)", p)
	case cmdutil.DryRunServer:
		return " (server dry run)"
	}
	return ""
}
