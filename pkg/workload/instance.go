package workload

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// WithInstances lists the kinds whose instances kill-instance and start-instance act on.
var WithInstances = []Kind{TApp}

// statusesPath is where a TApp keeps the desired status of its instances.
var statusesPath = []string{"spec", "statuses"}

// instanceIDPattern is the form of an instance id, as the CRD validates the keys of
// spec.statuses: a non-negative integer without leading zeros.
var instanceIDPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})$`)

// ParseInstanceIDs validates instance ids typed on the command line against a TApp's replicas:
// each must be a non-negative integer below replicas. It returns them sorted, without
// duplicates; the first bad one is a one-line error naming the TApp, the id and the allowed
// range.
func ParseInstanceIDs(ref Ref, args []string, replicas int32) ([]string, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%s: name at least one instance id: %s", ref, idRange(replicas))
	}
	seen := map[int]bool{}
	var ids []int
	for _, a := range args {
		if !instanceIDPattern.MatchString(a) {
			return nil, fmt.Errorf("%s: %q is not an instance id: %s", ref, a, idRange(replicas))
		}
		n, _ := strconv.Atoi(a)
		if n >= int(replicas) {
			return nil, fmt.Errorf("%s: instance id %d is out of range: %s", ref, n, idRange(replicas))
		}
		if !seen[n] {
			seen[n] = true
			ids = append(ids, n)
		}
	}
	sort.Ints(ids)
	out := make([]string, len(ids))
	for i, n := range ids {
		out[i] = strconv.Itoa(n)
	}
	return out, nil
}

// idRange says which ids a TApp of that many replicas has.
func idRange(replicas int32) string {
	switch replicas {
	case 0:
		return "it has no instances (replicas 0)"
	case 1:
		return "its only id is 0 (replicas 1)"
	}
	return fmt.Sprintf("ids are 0 to %d (replicas %d)", replicas-1, replicas)
}

// KillPatch is the JSON patch that sets spec.statuses[id] to Killed for each id. When the TApp
// has no spec.statuses yet, the patch tests that it is still absent and adds the whole map, so
// that two kill-instance commands racing on a TApp without statuses cannot overwrite each
// other's entries (the second fails its test and changes nothing).
func KillPatch(statusesPresent bool, ids []string) (Patch, error) {
	if !statusesPresent {
		m := map[string]string{}
		for _, id := range ids {
			m[id] = string(v1alpha1.InstanceKilled)
		}
		path := Pointer(statusesPath...)
		return JSONPatch(Test(path, nil), Add(path, m))
	}
	var ops []Op
	for _, id := range ids {
		ops = append(ops, Add(Pointer(append(statusesPath, id)...), string(v1alpha1.InstanceKilled)))
	}
	return JSONPatch(ops...)
}

// StartPatch is the JSON patch that removes spec.statuses[id] for each id. A "remove" fails if
// the entry is gone, so a concurrent start of the same instance changes nothing twice.
func StartPatch(ids []string) (Patch, error) {
	var ops []Op
	for _, id := range ids {
		ops = append(ops, Remove(Pointer(append(statusesPath, id)...)))
	}
	return JSONPatch(ops...)
}

// KillInstances decides what `kill-instance` does to a TApp: mark the given instances Killed,
// leaving out those already killed.
func KillInstances(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	return instances(ref, obj, args, true)
}

// StartInstances decides what `start-instance` does to a TApp: remove the Killed entries of the
// given instances, leaving out those that are not killed.
func StartInstances(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	return instances(ref, obj, args, false)
}

func instances(ref Ref, obj *unstructured.Unstructured, args []string, kill bool) (Change, error) {
	t, err := AsTApp(obj)
	if err != nil {
		return Change{}, err
	}
	ids, err := ParseInstanceIDs(ref, args, v1alpha1.ReplicasOrDefault(t.Spec.Replicas))
	if err != nil {
		return Change{}, err
	}
	var todo, done []string
	for _, id := range ids {
		if (t.Spec.Statuses[id] == v1alpha1.InstanceKilled) == kill {
			done = append(done, id)
		} else {
			todo = append(todo, id)
		}
	}
	if len(todo) == 0 {
		if kill {
			return Unchanged(ref, "%s: %s already killed", ref, instancesPhrase(done, "is", "are")), nil
		}
		return Unchanged(ref, "%s: %s not killed: nothing to start", ref, instancesPhrase(done, "is", "are")), nil
	}
	var p Patch
	if kill {
		_, present, _ := unstructured.NestedFieldNoCopy(obj.Object, statusesPath...)
		p, err = KillPatch(present, todo)
	} else {
		p, err = StartPatch(todo)
	}
	if err != nil {
		return Change{}, err
	}
	line := fmt.Sprintf("%s %s killed", ref, instancesPhrase(todo, "", ""))
	if len(done) > 0 {
		line += fmt.Sprintf(" (%s already killed)", instancesPhrase(done, "was", "were"))
	}
	if !kill {
		line = fmt.Sprintf("%s %s started", ref, instancesPhrase(todo, "", ""))
		if len(done) > 0 {
			line += fmt.Sprintf(" (%s not killed)", instancesPhrase(done, "was", "were"))
		}
	}
	return Change{Ref: ref, Patch: &p, Line: line}, nil
}

// instancesPhrase is "instance 3 is" or "instances 3, 4 are".
func instancesPhrase(ids []string, one, many string) string {
	if len(ids) == 1 {
		return strings.TrimSpace("instance " + ids[0] + " " + one)
	}
	return strings.TrimSpace("instances " + strings.Join(ids, ", ") + " " + many)
}
