package cmdtest

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-workload/kubectl-workload/config"
)

// nativeResources are the native resources the fake API server serves, named as a real one's
// discovery names them.
var nativeResources = []*metav1.APIResourceList{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}, Categories: []string{"all"}},
		{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", ShortNames: []string{"cm"}},
		{Name: "services", SingularName: "service", Namespaced: true, Kind: "Service", ShortNames: []string{"svc"}, Categories: []string{"all"}},
	}},
	{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", ShortNames: []string{"deploy"}, Categories: []string{"all"}},
		{Name: "statefulsets", SingularName: "statefulset", Namespaced: true, Kind: "StatefulSet", ShortNames: []string{"sts"}, Categories: []string{"all"}},
		{Name: "daemonsets", SingularName: "daemonset", Namespaced: true, Kind: "DaemonSet", ShortNames: []string{"ds"}, Categories: []string{"all"}},
		{Name: "replicasets", SingularName: "replicaset", Namespaced: true, Kind: "ReplicaSet", ShortNames: []string{"rs"}, Categories: []string{"all"}},
		{Name: "controllerrevisions", SingularName: "controllerrevision", Namespaced: true, Kind: "ControllerRevision"},
	}},
}

// Discovery is what the fake API server's discovery serves: the native resources above and our
// custom resources as the CRDs the plugin installs declare them (names, short names,
// categories), so that TYPE resolves in tests as it does against a real cluster.
func Discovery() discovery.CachedDiscoveryInterface {
	crdLists, err := crdResources()
	if err != nil {
		panic(err)
	}
	lists := make([]*metav1.APIResourceList, 0, len(nativeResources)+len(crdLists))
	for _, l := range append(append([]*metav1.APIResourceList{}, nativeResources...), crdLists...) {
		lists = append(lists, l.DeepCopy()) // each fake cluster its own, as each test mutates nothing shared
	}
	return memory.NewMemCacheClient(&fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}})
}

// crdResources are the resource lists of our CRDs, read once per test binary: the CRDs are
// megabytes of YAML, and parsing them for every command a test runs was most of the CPU time of
// the pkg/cmd tests under -race (docs/testing.md, "The suite's time").
var crdResources = sync.OnceValues(func() ([]*metav1.APIResourceList, error) {
	crds, err := config.CRDs()
	if err != nil {
		return nil, err
	}
	var lists []*metav1.APIResourceList
	byVersion := map[string]*metav1.APIResourceList{}
	for _, crd := range crds {
		n := crd.Spec.Names
		for _, v := range crd.Spec.Versions {
			gv := crd.Spec.Group + "/" + v.Name
			if byVersion[gv] == nil {
				byVersion[gv] = &metav1.APIResourceList{GroupVersion: gv}
				lists = append(lists, byVersion[gv])
			}
			byVersion[gv].APIResources = append(byVersion[gv].APIResources, metav1.APIResource{Name: n.Plural, SingularName: n.Singular,
				Kind: n.Kind, Namespaced: strings.EqualFold(string(crd.Spec.Scope), "Namespaced"), ShortNames: n.ShortNames,
				Categories: n.Categories, Verbs: metav1.Verbs{"get", "list", "watch", "patch", "update"}})
		}
	}
	return lists, nil
})

// ToDiscoveryClient is the fake API server's discovery.
func (f *Factory) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return f.discovery, nil
}

// ToRESTMapper maps types as kubectl's factory does: from discovery, with short names.
func (f *Factory) ToRESTMapper() (meta.RESTMapper, error) {
	m := restmapper.NewDeferredDiscoveryRESTMapper(f.discovery)
	return restmapper.NewShortcutExpander(m, f.discovery, nil), nil
}
