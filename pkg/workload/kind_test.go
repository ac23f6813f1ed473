package workload

import (
	"reflect"
	"sort"
	"testing"
)

func kindNames(kinds []Kind) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.Name)
	}
	sort.Strings(out)
	return out
}

// A verb's list of kinds is exactly the kinds whose helper has the verb's capability, so a new
// kind file that implements an interface is picked up (or, for a list kept in message order,
// this test names the list to add it to).
func TestCapabilityLists(t *testing.T) {
	for name, tt := range map[string]struct {
		list, with []Kind
	}{
		"Viewable":      {Viewable, kindsWith[StatusViewer]()},
		"ImageSettable": {ImageSettable, kindsWith[PodTemplater]()},
		"Drawable":      {Drawable, kindsWith[Helper]()},
		"Catalogue":     {Catalogue, kindsWith[Catalogued]()},
		"Listable":      {Listable, kindsWith[Lister]()},
		"Pausable":      {Pausable, kindsWith[Pauser]()},
		"Abortable":     {Abortable, kindsWith[Aborter]()},
		"Retryable":     {Retryable, kindsWith[Retrier]()},
		"Partitionable": {Partitionable, kindsWith[Partitioner]()},
		"Promotable":    {Promotable, kindsWith[Promoter]()},
		"WithHistory":   {WithHistory, kindsWith[Historian]()},
	} {
		if got, want := kindNames(tt.list), kindNames(tt.with); !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want the kinds with the capability: %v", name, got, want)
		}
	}
	want := map[string][]string{
		"Listable":      {"Canary", "TApp", "UnitedDeployment"},
		"Catalogue":     {"AnalysisTemplate", "ClusterAnalysisTemplate"},
		"Pausable":      {"Canary", "Deployment", "TApp", "UnitedDeployment"},
		"Abortable":     {"Canary"},
		"Retryable":     {"Canary"},
		"Partitionable": {"StatefulSet", "TApp", "UnitedDeployment"},
		"Promotable":    {"Canary", "UnitedDeployment"},
		"WithHistory":   {"DaemonSet", "Deployment", "StatefulSet", "TApp", "UnitedDeployment"},
	}
	for name, list := range map[string][]Kind{"Listable": Listable, "Catalogue": Catalogue, "Pausable": Pausable, "Abortable": Abortable, "Retryable": Retryable, "Partitionable": Partitionable, "Promotable": Promotable, "WithHistory": WithHistory} {
		if got := kindNames(list); !reflect.DeepEqual(got, want[name]) {
			t.Errorf("%s = %v, want %v", name, got, want[name])
		}
	}
}

// Every workload kind has what every verb of a rollout needs; the templates have none of it.
func TestWorkloadsAndTemplates(t *testing.T) {
	for _, k := range Kinds {
		if _, ok := k.helper.(Workload); !ok {
			t.Errorf("%s is in Kinds without a rollout status or a pod template", k.Name)
		}
	}
	for _, k := range Templates {
		if _, ok := k.helper.(StatusViewer); ok {
			t.Errorf("template kind %s reads a rollout status", k.Name)
		}
	}
}

// Every kind resolves by each name the plugin knows it by, when discovery cannot be asked.
func TestKindForEveryName(t *testing.T) {
	for _, k := range known() {
		for _, typed := range append([]string{k.Short, k.Name, k.Resource.Resource + "." + k.Resource.Group}, k.aliases...) {
			if got, ok := KindFor(typed); !ok || got.Name != k.Name {
				t.Errorf("KindFor(%q) = %v %v, want %s", typed, got.Name, ok, k.Name)
			}
		}
	}
}
