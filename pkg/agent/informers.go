package agent

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeinformers"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
)

// ManagedSelector selects the objects the agent created (pods, PVCs, subset workloads,
// ControllerRevisions, canary Deployments); the managed informer factory lists and watches only
// those.
var ManagedSelector = labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByAgent}.AsSelector().String()

// ManagedPodSelector selects the pods the managed factory caches: the agent's, less those of
// canary Deployments (labelled apps.workload.dev/canary). Those are the ReplicaSet controller's
// to create and delete, and no controller of the agent reads them but a podHealth check, which
// lists them from the API server when it measures: caching them cost a decode and a handler
// call per event of every canary pod, and their memory, for nothing (docs/architecture.md,
// "What the agent caches").
var ManagedPodSelector = ManagedSelector + ",!" + v1alpha1.LabelCanaryName

// StripManagedFields is the informers' cache transform: it drops metadata.managedFields, which
// controllers never read and which often make up a large part of an object, before the object is
// stored. It mutates in place (safe: a transform sees an object before anyone else), is
// idempotent, and passes through anything that is not an object. For a
// cache.DeletedFinalStateUnknown tombstone it strips the object inside.
func StripManagedFields(obj interface{}) (interface{}, error) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if _, err := StripManagedFields(tombstone.Obj); err != nil {
			return nil, err
		}
		return tombstone, nil
	}
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

// TrimPods is the managed factory's transform: StripManagedFields, and for a pod TrimPod. The
// agent's pods are most of what it caches (BenchmarkManySmall's heap profile: 6000 pods, 28 of
// 64 MB in use), so what no controller reads is dropped before it is stored.
func TrimPods(obj interface{}) (interface{}, error) {
	obj, err := StripManagedFields(obj)
	if err != nil {
		return nil, err
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		TrimPod(o)
	case cache.DeletedFinalStateUnknown:
		if p, ok := o.Obj.(*corev1.Pod); ok {
			TrimPod(p)
		}
	}
	return obj, nil
}

// TrimPod drops, in place, the parts of a cached pod that the agent's controllers never read:
// volumes (the service account's projected token volume is on every pod), scheduling
// constraints, and of each container everything but its name, image, resources and restart
// policy (a sidecar's). What is kept is what the TApp, UnitedDeployment and Canary controllers
// and podHealth checks read: all metadata, the containers' images and resources (in-place image
// updates and resizes), readiness gates, node name, restart policy, and the whole status. No
// controller writes a cached pod back (pods are patched, created and deleted), so nothing
// dropped here can be lost. TestTrimPodKeepsWhatControllersRead lists what stays.
func TrimPod(p *corev1.Pod) {
	s := &p.Spec
	s.Volumes = nil
	s.Tolerations = nil
	s.Affinity = nil
	s.NodeSelector = nil
	s.TopologySpreadConstraints = nil
	s.SecurityContext = nil
	s.DNSConfig = nil
	s.HostAliases = nil
	s.EphemeralContainers = nil
	trimContainers(s.InitContainers)
	trimContainers(s.Containers)
}

func trimContainers(cs []corev1.Container) {
	for i := range cs {
		c := &cs[i]
		cs[i] = corev1.Container{Name: c.Name, Image: c.Image, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
}

// Factories are the shared informer factories the controllers share.
type Factories struct {
	// Managed is for native objects the agent created (they carry the managed-by label), scoped
	// to the namespace.
	Managed *kubeinformers.Factory
	// Workloads is for the agent's own API group, scoped to the namespace.
	Workloads externalversions.SharedInformerFactory
	// Gateway is for the Gateway API's HTTPRoutes (a Canary's route), scoped to the namespace;
	// nil unless EnableGateway was called. Not filtered by labels: routes are the user's, and
	// few (docs/traffic.md, "What the agent caches").
	Gateway *kubeinformers.Factory
	// Referenced is for the few native objects of the user's that a controller reads though
	// no label of ours marks them: HorizontalPodAutoscalers (a Canary refuses one that scales
	// the Deployments it moves; docs/canary.md, "Autoscaling"). Unfiltered, scoped to the
	// namespace; a factory builds and starts only the informers requested from it, so the kinds nobody
	// asks for cost nothing.
	Referenced *kubeinformers.Factory
}

// EnableGateway adds the Gateway API factory, with the StripManagedFields transform.
// Its informers list through the Gateway API client handed to HTTPRoutes.
func (f *Factories) EnableGateway(kube kubeclient.Interface, namespace string, resync time.Duration) {
	f.Gateway = kubeinformers.New(kube, resync,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTransform(StripManagedFields))
}

// servesHTTPRoutes reports whether the API server serves gateway.networking.k8s.io/v1
// httproutes. Asked once when the agent starts leading: CRDs installed later need a restart.
func servesHTTPRoutes(kube kubeclient.Interface) bool {
	list, err := kube.Discovery().ServerResourcesForGroupVersion("gateway.networking.k8s.io/v1")
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == "httproutes" {
			return true
		}
	}
	return false
}

// NewFactories builds the informer factories of native objects the agent created and of its own
// kinds, all with the StripManagedFields transform;
// the managed one also trims pods (TrimPods).
// namespace empty means all namespaces.
func NewFactories(kube kubeclient.Interface, client versioned.Interface, namespace string, resync time.Duration) *Factories {
	return &Factories{
		Managed: newManagedFactory(kube, namespace, resync),
		Workloads: externalversions.NewSharedInformerFactoryWithOptions(client, resync,
			externalversions.WithNamespace(namespace),
			externalversions.WithTransform(StripManagedFields)),
		Referenced: kubeinformers.New(kube, resync,
			kubeinformers.WithNamespace(namespace),
			kubeinformers.WithTransform(StripManagedFields)),
	}
}

// newManagedFactory is the managed-by factory: the managed-by selector for every kind but pods,
// which select ManagedPodSelector.
func newManagedFactory(kube kubeclient.Interface, namespace string, resync time.Duration) *kubeinformers.Factory {
	return kubeinformers.New(kube, resync,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ManagedSelector }),
		kubeinformers.WithTweakListOptionsFor(&corev1.Pod{}, func(o *metav1.ListOptions) { o.LabelSelector = ManagedPodSelector }),
		kubeinformers.WithTransform(TrimPods))
}

// Start starts every informer requested so far. Informers requested later need another Start.
func (f *Factories) Start(stop <-chan struct{}) {
	f.Managed.Start(stop)
	f.Workloads.Start(stop)
	f.Referenced.Start(stop)
	if f.Gateway != nil {
		f.Gateway.Start(stop)
	}
}

// WaitForCacheSync waits until every started informer has synced or stop is closed, and returns
// the types that did not sync (empty when all did).
func (f *Factories) WaitForCacheSync(stop <-chan struct{}) []string {
	var unsynced []string
	for typ, ok := range f.Managed.WaitForCacheSync(stop) {
		if !ok {
			unsynced = append(unsynced, typ.String()+" (managed)")
		}
	}
	for typ, ok := range f.Workloads.WaitForCacheSync(stop) {
		if !ok {
			unsynced = append(unsynced, typ.String())
		}
	}
	for typ, ok := range f.Referenced.WaitForCacheSync(stop) {
		if !ok {
			unsynced = append(unsynced, typ.String())
		}
	}
	if f.Gateway != nil {
		for typ, ok := range f.Gateway.WaitForCacheSync(stop) {
			if !ok {
				unsynced = append(unsynced, typ.String())
			}
		}
	}
	return unsynced
}

// Shutdown stops the informers and waits for their goroutines. The stop channel given to Start
// must be closed first.
func (f *Factories) Shutdown() {
	f.Managed.Shutdown()
	f.Workloads.Shutdown()
	f.Referenced.Shutdown()
	if f.Gateway != nil {
		f.Gateway.Shutdown()
	}
}
