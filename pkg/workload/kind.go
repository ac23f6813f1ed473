// Package workload is the plugin's per-kind layer, after kubectl's polymorphic helpers: it knows
// the kinds the verbs act on, how a person names them, and (in the files beside this one) how
// each verb's intent becomes a patch or a status for each kind. Verbs stay kind-agnostic.
package workload

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Kind is one kind of workload the plugin acts on.
type Kind struct {
	// Name is the API kind, such as "TApp".
	Name string
	// Resource is what the API server serves it as.
	Resource schema.GroupVersionResource
	// Short is the name shown in messages and accepted on the command line, such as "tapp".
	Short string
	// aliases are the other names a person may type (plural, singular, group-qualified).
	aliases []string
}

var (
	TApp = Kind{Name: "TApp", Short: "tapp",
		Resource: v1alpha1.SchemeGroupVersion.WithResource("tapps"),
		aliases:  []string{"tapps", "tapps.apps.workload.dev"}}
	UnitedDeployment = Kind{Name: "UnitedDeployment", Short: "ud",
		Resource: v1alpha1.SchemeGroupVersion.WithResource("uniteddeployments"),
		aliases:  []string{"uniteddeployment", "uniteddeployments", "uniteddeployments.apps.workload.dev"}}
	Canary = Kind{Name: "Canary", Short: "canary",
		Resource: v1alpha1.SchemeGroupVersion.WithResource("canaries"),
		aliases:  []string{"canaries", "canaries.apps.workload.dev"}}
	Deployment = Kind{Name: "Deployment", Short: "deploy",
		Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		aliases:  []string{"deployment", "deployments", "deployments.apps"}}
	StatefulSet = Kind{Name: "StatefulSet", Short: "sts",
		Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
		aliases:  []string{"statefulset", "statefulsets", "statefulsets.apps"}}
)

// Kinds lists every kind the plugin knows, ours first.
var Kinds = []Kind{TApp, UnitedDeployment, Canary, Deployment, StatefulSet}

// Ours reports whether the kind is one of our custom resources (not a native workload).
func (k Kind) Ours() bool { return k.Resource.Group == v1alpha1.GroupName }

// KindFor resolves what a person typed ("tapp", "deployments", "UnitedDeployment", …).
func KindFor(typed string) (Kind, bool) {
	t := strings.ToLower(typed)
	for _, k := range Kinds {
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

// ParseRef reads the object a verb acts on from its arguments, as kubectl does: "TYPE/NAME" or
// "TYPE NAME". It returns the Ref and the arguments left after it. allowed lists the kinds the
// verb supports; a kind outside it is refused with a message listing those that are allowed.
func ParseRef(args []string, allowed ...Kind) (Ref, []string, error) {
	if len(args) == 0 {
		return Ref{}, nil, fmt.Errorf("name the workload as TYPE/NAME or TYPE NAME, where TYPE is one of %s", names(allowed))
	}
	typed, name, slash := strings.Cut(args[0], "/")
	rest := args[1:]
	if !slash {
		if len(rest) == 0 {
			return Ref{}, nil, fmt.Errorf("%q: name the workload as TYPE/NAME or TYPE NAME, where TYPE is one of %s", args[0], names(allowed))
		}
		name, rest = rest[0], rest[1:]
	}
	kind, ok := KindFor(typed)
	if !ok {
		return Ref{}, nil, fmt.Errorf("unknown workload type %q: use one of %s", typed, names(allowed))
	}
	if !kindIn(kind, allowed) {
		return Ref{}, nil, fmt.Errorf("%s/%s: this command does not work on a %s; it works on %s", kind.Short, name, kind.Name, names(allowed))
	}
	if name == "" {
		return Ref{}, nil, fmt.Errorf("%q: the name is empty", args[0])
	}
	return Ref{Kind: kind, Name: name}, rest, nil
}

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
