// Package workload is the plugin's per-kind layer, after kubectl's polymorphic helpers: it knows
// the kinds the verbs act on, how a person names them, and (in the files beside this one) how
// each verb's intent becomes a patch or a status for each kind. Verbs stay kind-agnostic.
package workload

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Kind is one kind of workload the plugin acts on: how the API server serves it, how a person
// names it, and (helper) what the plugin knows about it. Each kind is declared, with all of its
// helper, in a file of its own (tapp.go, uniteddeployment.go, canary.go, deployment.go,
// statefulset.go, daemonset.go) and listed in Kinds.
type Kind struct {
	// Name is the API kind, such as "TApp".
	Name string
	// Resource is what the API server serves it as.
	Resource schema.GroupVersionResource
	// Short is the name shown in messages and accepted on the command line, such as "tapp".
	Short string
	// ClusterScoped is true for a kind the API server serves outside namespaces
	// (ClusterAnalysisTemplate).
	ClusterScoped bool
	// aliases are the other names a person may type (plural, singular, group-qualified), used
	// when the API server's discovery cannot be asked (see Resolve) and for completion.
	aliases []string
	helper  Helper
}

// Helper is what the plugin knows about one kind, after kubectl's polymorphic helpers. Every
// kind draws its tree (get); a workload (Workload) also reads its rollout status and finds its
// pod template; a kind that supports more verbs also implements their interfaces (Lister,
// Pauser, Partitioner, Promoter, Aborter, Catalogued). A verb asks the kind for the interface
// it needs and refuses a kind without it.
type Helper interface {
	// tree draws the object and what it owns, down to pods.
	tree(t *treeReader, obj *unstructured.Unstructured) (*Node, error)
}

// Workload is the helper of a kind that runs pods: every kind of Kinds.
type Workload interface {
	Helper
	StatusViewer
	PodTemplater
}

// PodTemplater is a kind with a pod template.
type PodTemplater interface {
	// PodTemplatePath is where an object keeps the pod template `set image`, `undo` and
	// `history` act on, and how messages name that template ("" when it is the kind's only
	// one); pool names a TApp's templatePool entry.
	PodTemplatePath(ref Ref, obj *unstructured.Unstructured, pool string) ([]string, string, error)
}

// templatePooler is a kind with named pod templates beside its template, which `set image
// --template` names.
type templatePooler interface{ templatePool() }

// Lister is a kind `list` tabulates.
type Lister interface {
	Replicas(obj *unstructured.Unstructured) (Replicas, error)
}

// Pauser is a kind with a pause switch (pause, resume).
type Pauser interface {
	// PausedPath is where the switch is.
	PausedPath() []string
}

// Partitioner is a kind set-partition acts on.
type Partitioner interface {
	// SetPartition decides what set-partition does with args (after TYPE/NAME).
	SetPartition(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error)
}

// Aborter is a kind abort acts on.
type Aborter interface {
	Abort(ref Ref, obj *unstructured.Unstructured) (Change, error)
}

// Retrier is a kind retry acts on.
type Retrier interface {
	Retry(ref Ref, obj *unstructured.Unstructured) (Change, error)
}

// Helper is the kind's helper.
func (k Kind) Helper() Helper { return k.helper }

// Kinds lists every workload kind the plugin knows, ours first.
var Kinds = []Kind{TApp, UnitedDeployment, Canary, Deployment, StatefulSet, DaemonSet}

// Templates lists the kinds that are no workload but that the plugin shows (list, get): the
// analysis templates Canaries refer to.
var Templates = []Kind{AnalysisTemplate, ClusterAnalysisTemplate}

// Drawable lists every kind `get` draws: all of them.
var Drawable = kindsWith[Helper]()

// known is every kind the plugin knows, workloads first.
func known() []Kind { return slices.Concat(Kinds, Templates) }

// kindsWith lists the kinds whose helper implements T, in the order of known.
func kindsWith[T any]() []Kind {
	var out []Kind
	for _, k := range known() {
		if _, ok := k.helper.(T); ok {
			out = append(out, k)
		}
	}
	return out
}

// capability is the helper of ref's kind as T, or the one-line error of a kind without it.
func capability[T any](ref Ref, what string) (T, error) {
	h, ok := ref.Kind.helper.(T)
	if !ok {
		return h, fmt.Errorf("%s: a %s %s", ref, ref.Kind.Name, what)
	}
	return h, nil
}

// Ours reports whether the kind is one of our custom resources (not a native workload).
func (k Kind) Ours() bool { return k.Resource.Group == v1alpha1.GroupName }

// KindFor resolves what a person typed ("tapp", "deployments", "UnitedDeployment", …).
func KindFor(typed string) (Kind, bool) {
	t := strings.ToLower(typed)
	for _, k := range known() {
		if t == k.Short || t == strings.ToLower(k.Name) {
			return k, true
		}
		for _, a := range k.aliases {
			if t == a {
				return k, true
			}
		}
	}
	return Kind{}, false
}

// Ref names one object of a kind, in the command's namespace.
type Ref struct {
	Kind Kind
	Name string
}

// String is how messages name the object: "tapp/web".
func (r Ref) String() string { return r.Kind.Short + "/" + r.Name }

func kindIn(k Kind, list []Kind) bool {
	for _, l := range list {
		if l.Name == k.Name {
			return true
		}
	}
	return false
}

func names(kinds []Kind) string {
	var out []string
	for _, k := range kinds {
		out = append(out, fmt.Sprintf("%s (%s)", k.Short, k.Name))
	}
	return strings.Join(out, ", ")
}
