package workload

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
)

// Target is the one object a verb acts on, as resolved from the command line.
type Target struct {
	Ref       Ref
	Namespace string
}

// Resolve reads the object a verb acts on, as kubectl does: TYPE/NAME or TYPE NAME from args,
// or the object held in files (-f). TYPE is resolved through kubectl's resource builder and the
// RESTMapper of g, so every name the API server's discovery gives a resource works: full
// (tapps.apps.workload.dev), plural, singular, kind and short names. Nothing is read from the
// cluster beyond discovery: the verb reads the object itself. It returns the arguments left
// after the object (all of args with -f). allowed lists the kinds the verb supports; any other
// kind is refused with a message listing those that are.
//
// The names of our own kinds (ownKindFor) resolve without discovery: the builder read the whole
// discovery cache, twice, between loading the kubeconfig and the verb's first request
// (bench/RESULTS.md, "Plugin latency against kubectl"), and those names can only mean our kinds
// to this plugin.
func Resolve(g genericclioptions.RESTClientGetter, args, files []string, allowed ...Kind) (Target, []string, error) {
	namespace, explicit, err := g.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return Target{}, nil, err
	}
	var rest []string
	var typed, name string
	if len(files) == 0 {
		if typed, name, rest, err = splitRef(args, allowed); err != nil {
			return Target{}, nil, err
		}
		if kind, ok := ownKindFor(typed); ok {
			target := Target{Ref: Ref{Kind: kind, Name: name}, Namespace: namespace}
			return target, rest, allowedKind(target.Ref, allowed)
		}
	}
	b := resource.NewBuilder(g).Unstructured().NamespaceParam(namespace).DefaultNamespace().
		RequireObject(false).Flatten()
	if len(files) > 0 {
		b, rest = b.FilenameParam(explicit, &resource.FilenameOptions{Filenames: files}), args
	} else {
		b = b.ResourceTypeOrNameArgs(true, typed+"/"+name)
	}
	infos, err := b.Do().Infos()
	if err != nil && typed != "" {
		return resolveOffline(typed, name, namespace, rest, err, allowed)
	}
	if err != nil {
		return Target{}, nil, err
	}
	if len(files) > 0 {
		if infos, err = workloadsIn(files, infos, allowed); err != nil {
			return Target{}, nil, err
		}
	}
	info := infos[0]
	if typed == "" {
		typed = strings.ToLower(info.Mapping.GroupVersionKind.Kind)
	}
	kind, ok := kindOf(info.Mapping.GroupVersionKind.GroupKind())
	if !ok {
		return Target{}, nil, fmt.Errorf("unknown workload type %q: use one of %s", typed, names(allowed))
	}
	target := Target{Ref: Ref{Kind: kind, Name: info.Name}, Namespace: info.Namespace}
	return target, rest, allowedKind(target.Ref, allowed)
}

// workloadsIn keeps the one workload of the objects read from files: a file may hold others
// beside it (a Service, a ConfigMap), as the examples do, and a workload beside the Canary that
// releases it (a Deployment and its Canary): then the one of a kind the verb works on (allowed)
// is taken. A refusal names the workloads the files hold.
func workloadsIn(files []string, infos []*resource.Info, allowed []Kind) ([]*resource.Info, error) {
	var out, fit []*resource.Info
	var held []string
	for _, info := range infos {
		kind, ok := kindOf(info.Mapping.GroupVersionKind.GroupKind())
		if !ok {
			continue
		}
		out, held = append(out, info), append(held, Ref{Kind: kind, Name: info.Name}.String())
		if kindIn(kind, allowed) {
			fit = append(fit, info)
		}
	}
	from := strings.Join(files, ", ")
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("%s holds no workload: use one of %s", from, names(Kinds))
	case len(fit) == 1, len(out) == 1:
		return append(fit, out...)[:1], nil // the one of an allowed kind, else the one to refuse
	case len(fit) == 0:
		return nil, fmt.Errorf("%s holds no %s: it holds %s", from, names(allowed), strings.Join(held, ", "))
	}
	return nil, fmt.Errorf("%s holds %d workloads (%s): this command acts on one; name it as TYPE/NAME", from, len(out), strings.Join(held, ", "))
}

// ownKindFor is the kind of one of our custom resources that typed names as its CRD declares it
// (short, singular, plural, plural.group; any case): what Resolve resolves without discovery.
// Every other name, native kinds and categories included, goes through discovery, where a
// short name of another API group may claim it.
func ownKindFor(typed string) (Kind, bool) {
	kind, ok := KindFor(typed)
	return kind, ok && kind.Ours()
}

// resolveOffline resolves TYPE by the plugin's own names when the builder could not (its error
// is err): the API server does not serve TYPE, or its discovery cannot be reached. Then the
// argument checks still come first, and the verb fails reading the object with the reason.
func resolveOffline(typed, name, namespace string, rest []string, err error, allowed []Kind) (Target, []string, error) {
	kind, ok := KindFor(typed)
	if !ok {
		// The builder's error for a type that is not served has no typed form to test.
		if strings.Contains(err.Error(), "doesn't have a resource type") {
			return Target{}, nil, fmt.Errorf("unknown workload type %q: use one of %s", typed, names(allowed))
		}
		return Target{}, nil, err
	}
	target := Target{Ref: Ref{Kind: kind, Name: name}, Namespace: namespace}
	return target, rest, allowedKind(target.Ref, allowed)
}

func allowedKind(ref Ref, allowed []Kind) error {
	if !kindIn(ref.Kind, allowed) {
		return fmt.Errorf("%s: this command does not work on %s; it works on %s", ref, article(ref.Kind.Name), names(allowed))
	}
	return nil
}

// article puts "a" or "an" before a kind's name, by its first letter (kinds are spelled, not
// said: "an AnalysisTemplate", "a UnitedDeployment").
func article(name string) string {
	if name != "" && strings.ContainsRune("AEIOaeio", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// splitRef splits TYPE/NAME or TYPE NAME from the arguments after it.
func splitRef(args []string, allowed []Kind) (typed, name string, rest []string, err error) {
	if len(args) == 0 {
		return "", "", nil, fmt.Errorf("name the workload as TYPE/NAME or TYPE NAME, where TYPE is one of %s", names(allowed))
	}
	typed, name, slash := strings.Cut(args[0], "/")
	rest = args[1:]
	if !slash {
		if len(rest) == 0 {
			return "", "", nil, fmt.Errorf("%q: name the workload as TYPE/NAME or TYPE NAME, where TYPE is one of %s", args[0], names(allowed))
		}
		name, rest = rest[0], rest[1:]
	}
	if name == "" {
		return "", "", nil, fmt.Errorf("%q: the name is empty", args[0])
	}
	return typed, name, rest, nil
}

// kindOf is the kind the API server serves as gk, if the plugin knows it.
func kindOf(gk schema.GroupKind) (Kind, bool) {
	for _, k := range known() {
		if k.Resource.Group == gk.Group && k.Name == gk.Kind {
			return k, true
		}
	}
	return Kind{}, false
}
