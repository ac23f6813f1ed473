package e2eenv

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// CreateManifests creates every object of a manifest file (such as one of examples/) in the
// test's namespace, whatever namespace the file names, finding each kind through discovery.
func (e *Env) CreateManifests(path string) {
	e.T.Helper()
	objs, err := localcluster.ReadManifests(path)
	if err != nil {
		e.T.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(e.Cluster.RESTConfig())
	if err != nil {
		e.T.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			mapper.Reset() // a CRD Established after discovery was first read
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			e.T.Fatalf("%s: %v", path, err)
		}
		obj.SetNamespace(e.NS)
		if _, err := e.Dyn.Resource(mapping.Resource).Namespace(e.NS).Create(e.Ctx, obj, metav1.CreateOptions{}); err != nil {
			e.T.Fatalf("%s: creating %s %s: %v", path, gvk.Kind, obj.GetName(), err)
		}
	}
}
