package workload

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ImageSettable lists the kinds `set image` acts on.
var ImageSettable = Kinds

// PodTemplatePath is where an object keeps the pod template `set image`, `undo` and `history`
// act on (each kind's PodTemplater says where), and how messages name that template ("" when it
// is the kind's only one).
func PodTemplatePath(ref Ref, obj *unstructured.Unstructured, pool string) ([]string, string, error) {
	p, ok := ref.Kind.helper.(PodTemplater)
	if !ok {
		return nil, "", fmt.Errorf("a %s has no pod template", ref.Kind.Name)
	}
	return p.PodTemplatePath(ref, obj, pool)
}

// PodTemplateAt decodes the pod template found at path (an empty one when absent).
func PodTemplateAt(obj *unstructured.Unstructured, path []string) (*corev1.PodTemplateSpec, error) {
	t := &corev1.PodTemplateSpec{}
	m, ok, err := unstructured.NestedMap(obj.Object, path...)
	if err != nil || !ok {
		return t, err
	}
	err = runtime.DefaultUnstructuredConverter.FromUnstructured(m, t)
	return t, err
}

// ImageChange is one container whose image `set image` changes.
type ImageChange struct {
	// Init is true for an init container.
	Init  bool
	Index int
	Name  string
	From  string
	To    string
}

// ParseImageArgs reads CONTAINER=IMAGE arguments ("*" names every container).
func ParseImageArgs(ref Ref, args []string) ([][2]string, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%s: give at least one CONTAINER=IMAGE (or *=IMAGE for every container)", ref)
	}
	var out [][2]string
	for _, a := range args {
		name, image, ok := strings.Cut(a, "=")
		if !ok || name == "" || image == "" || strings.ContainsAny(image, " \t") {
			return nil, fmt.Errorf("%s: %q is not CONTAINER=IMAGE", ref, a)
		}
		out = append(out, [2]string{name, image})
	}
	return out, nil
}

// ImageChanges resolves CONTAINER=IMAGE assignments against a pod template's containers and
// init containers, in the order they appear: later assignments win, "*" assigns every
// container. An unknown container is an error listing the containers. Containers already
// running their image are left out.
func ImageChanges(ref Ref, what string, t *corev1.PodTemplateSpec, assignments [][2]string) ([]ImageChange, error) {
	type slot struct {
		init  bool
		index int
		from  string
	}
	var order []string
	slots := map[string]slot{}
	for i, c := range t.Spec.InitContainers {
		slots[c.Name] = slot{true, i, c.Image}
		order = append(order, c.Name)
	}
	for i, c := range t.Spec.Containers {
		slots[c.Name] = slot{false, i, c.Image}
		order = append(order, c.Name)
	}
	want := map[string]string{}
	for _, a := range assignments {
		if a[0] == "*" {
			if len(order) == 0 {
				return nil, fmt.Errorf("%s has no containers%s", ref, in(what))
			}
			for _, n := range order {
				want[n] = a[1]
			}
			continue
		}
		if _, ok := slots[a[0]]; !ok {
			return nil, fmt.Errorf("%s has no container %q%s: its containers are %s", ref, a[0], in(what), containerList(t))
		}
		want[a[0]] = a[1]
	}
	var changes []ImageChange
	for _, n := range order {
		image, ok := want[n]
		if !ok || slots[n].from == image {
			continue
		}
		s := slots[n]
		changes = append(changes, ImageChange{Init: s.init, Index: s.index, Name: n, From: s.from, To: image})
	}
	return changes, nil
}

func in(what string) string {
	if what == "" {
		return ""
	}
	return " in " + what
}

func containerList(t *corev1.PodTemplateSpec) string {
	var names []string
	for _, c := range t.Spec.Containers {
		names = append(names, c.Name)
	}
	s := strings.Join(names, ", ")
	if len(t.Spec.InitContainers) > 0 {
		var inits []string
		for _, c := range t.Spec.InitContainers {
			inits = append(inits, c.Name)
		}
		s += " (init: " + strings.Join(inits, ", ") + ")"
	}
	return s
}

// ImageStrategicPatch is the strategic merge patch that sets container images in a native
// workload's spec.template: containers are merged by name, so no index is involved.
func ImageStrategicPatch(changes []ImageChange) (Patch, error) {
	var containers, inits []interface{}
	for _, c := range changes {
		entry := map[string]string{"name": c.Name, "image": c.To}
		if c.Init {
			inits = append(inits, entry)
		} else {
			containers = append(containers, entry)
		}
	}
	podSpec := map[string]interface{}{}
	if len(containers) > 0 {
		podSpec["containers"] = containers
	}
	if len(inits) > 0 {
		podSpec["initContainers"] = inits
	}
	data, err := mergePatch([]string{"spec", "template", "spec"}, podSpec)
	return Patch{Type: types.StrategicMergePatchType, Data: data}, err
}

// ImageOps are the JSON patch operations that set container images in the pod template at path
// of one of our custom resources (which accept no strategic merge patch): for each container,
// a "test" that the container at that index still has that name, then the replacement of its
// image. If the containers were reordered or renamed meanwhile, the test fails and nothing
// changes.
func ImageOps(path []string, changes []ImageChange) []Op {
	var ops []Op
	for _, c := range changes {
		list := "containers"
		if c.Init {
			list = "initContainers"
		}
		at := append(append([]string{}, path...), "spec", list, fmt.Sprint(c.Index))
		ops = append(ops,
			Test(Pointer(append(at, "name")...), c.Name),
			Replace(Pointer(append(at, "image")...), c.To))
	}
	return ops
}

// GenerationTest is the JSON patch "test" of metadata.generation as read: the API server bumps
// the generation on every change of the spec (and only then), so the test fails if anyone
// changed the spec since the object was read, but not for status updates.
func GenerationTest(obj *unstructured.Unstructured) Op {
	if g, ok, _ := unstructured.NestedInt64(obj.Object, "metadata", "generation"); ok {
		return Test("/metadata/generation", g)
	}
	return Test("/metadata/generation", nil)
}

// SetImage decides what `set image` does: args are CONTAINER=IMAGE (or *=IMAGE); pool names a
// TApp templatePool entry (see PodTemplatePath). Native workloads get a strategic merge patch,
// our custom resources a JSON patch by container index with a test on each container's name.
// Nothing is recorded for undo: the controllers keep the history.
func SetImage(ref Ref, obj *unstructured.Unstructured, pool string, args []string) (Change, error) {
	if _, pooled := ref.Kind.helper.(templatePooler); pool != "" && !pooled {
		return Change{}, fmt.Errorf("%s: --template names a TApp's templatePool entry; a %s has one pod template", ref, ref.Kind.Name)
	}
	assignments, err := ParseImageArgs(ref, args)
	if err != nil {
		return Change{}, err
	}
	path, what, err := PodTemplatePath(ref, obj, pool)
	if err != nil {
		return Change{}, err
	}
	tpl, err := PodTemplateAt(obj, path)
	if err != nil {
		return Change{}, fmt.Errorf("%s: reading %s: %w", ref, strings.Join(path, "."), err)
	}
	changes, err := ImageChanges(ref, what, tpl, assignments)
	if err != nil {
		return Change{}, err
	}
	if len(changes) == 0 {
		return Unchanged(ref, "%s: %s%s", ref, alreadyRunning(assignments), in(what)), nil
	}
	var p Patch
	switch {
	case !ref.Kind.Ours():
		p, err = ImageStrategicPatch(changes)
	default:
		p, err = JSONPatch(ImageOps(path, changes)...)
	}
	if err != nil {
		return Change{}, err
	}
	var parts []string
	for _, c := range changes {
		parts = append(parts, fmt.Sprintf("%s=%s (was %s)", c.Name, c.To, c.From))
	}
	return Change{Ref: ref, Patch: &p, Line: fmt.Sprintf("%s image updated%s: %s", ref, in(what), strings.Join(parts, ", "))}, nil
}

// alreadyRunning says that the containers named already run their images.
func alreadyRunning(assignments [][2]string) string {
	images := map[string]string{}
	var names []string
	for _, a := range assignments {
		if _, seen := images[a[0]]; !seen {
			names = append(names, a[0])
		}
		images[a[0]] = a[1]
	}
	switch {
	case len(names) == 1 && names[0] == "*":
		return "every container already runs " + images["*"]
	case len(names) == 1:
		return "container " + names[0] + " already runs " + images[names[0]]
	}
	return "containers " + strings.Join(names, ", ") + " already run the images given"
}
