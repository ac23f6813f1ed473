package agent

import (
	"errors"
	"time"

	"k8s.io/client-go/tools/cache"
	cpv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	cpclientset "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned"
	cpinformers "sigs.k8s.io/cluster-inventory-api/client/informers/externalversions"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// validateProviderFile checks --clusterprofile-provider-file: empty, or a provider file the
// access library reads with at least one provider.
func validateProviderFile(path string) error {
	if path == "" {
		return nil
	}
	cfg, err := access.NewFromFile(path)
	if err != nil {
		return errors.New(oneLine(err))
	}
	if len(cfg.Providers) == 0 {
		return errors.New("it names no provider")
	}
	return nil
}

// servesClusterProfiles reports whether the hub serves multicluster.x-k8s.io/v1alpha1
// clusterprofiles. Asked once when the agent starts leading, as for HTTPRoutes: an informer of a
// resource the server lacks would never sync and would hold every controller back.
func servesClusterProfiles(kube kubeclient.Interface) bool {
	list, err := kube.Discovery().ServerResourcesForGroupVersion(cpv1alpha1.GroupVersion.String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == "clusterprofiles" {
			return true
		}
	}
	return false
}

// EnableClusterProfiles adds the ClusterProfile informer factory (every namespace: cluster
// managers publish profiles in a namespace of their own, not the workloads').
func (f *Factories) EnableClusterProfiles(client cpclientset.Interface, resync time.Duration) {
	f.Profiles = cpinformers.NewSharedInformerFactoryWithOptions(client, resync,
		cpinformers.WithTransform(StripManagedFields))
}

// newFleet builds the member registry the controllers reach member clusters through: the
// provider file's access, the hub's ClusterProfiles (when served) and the agent's write fence
// on every member transport.
func (a *Agent) newFleet(factories *Factories) (*fleet.Registry, error) {
	opts := fleet.Options{
		Namespace: a.opts.Namespace,
		UserAgent: UserAgent(a.opts.Identity),
		QPS:       a.opts.QPS,
		Burst:     a.opts.Burst,
		Fence:     a.clients.Fence.Transport,
		Resync:    a.opts.ResyncPeriod,
		Transform: StripManagedFields,
	}
	if a.opts.ClusterProfileProviderFile != "" {
		cfg, err := access.NewFromFile(a.opts.ClusterProfileProviderFile)
		if err != nil {
			return nil, err
		}
		opts.Access = cfg
	}
	var informer cache.SharedIndexInformer
	if factories.Profiles != nil {
		inf := factories.Profiles.Apis().V1alpha1().ClusterProfiles()
		opts.Profiles, informer = inf.Lister(), inf.Informer()
	}
	return fleet.New(opts, informer)
}
