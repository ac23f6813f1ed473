package uniteddeployment

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/podorder"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

const (
	// ControllerName names the controller in the agent, its work queue and its metrics; its
	// Events come from base.EventComponent(ControllerName), "uniteddeployment-controller".
	ControllerName = "uniteddeployment"
	// kind is the kind of the objects the controller reconciles, for metrics and owner references.
	kind = "UnitedDeployment"
)

// controllerKind is the GroupVersionKind of UnitedDeployment.
var controllerKind = appsv1alpha1.SchemeGroupVersion.WithKind(kind)

// Controller reconciles UnitedDeployments.
type Controller struct {
	*base.Base
	client versioned.Interface

	udLister       listers.UnitedDeploymentLister
	revisionLister appslisters.ControllerRevisionLister
	podLister      corelisters.PodLister

	// kinds holds one entry per subset kind, in the order the template's fields are checked.
	kinds   []workloadKind
	history revision.History

	// expectations holds, per UnitedDeployment key, the workload creations and deletions issued
	// but not yet observed; statuses its last status write while the cache lags it.
	expectations *expectations.ControllerExpectations
	statuses     *expectations.StatusWrites[*appsv1alpha1.UnitedDeploymentStatus]
}

// NewController returns a UnitedDeployment controller reading UnitedDeployments and TApps from
// ourInformers, StatefulSets, Deployments and ControllerRevisions from kubeInformers, and pods
// from podInformer. It registers its event handlers; the caller starts the informers (and waits
// for them, or lets Run wait).
//
// The pod informer only needs the pods the agent manages (label
// app.kubernetes.io/managed-by=workload-agent): subset workloads stamp that label, with the
// UnitedDeployment, subset and revision labels, on their pod templates, and the controller
// counts pods per subset and revision to report updated and ready replicas and to decide when
// the updated revision becomes current.
func NewController(
	kubeClient kubernetes.Interface,
	client versioned.Interface,
	kubeInformers informers.SharedInformerFactory,
	ourInformers externalversions.SharedInformerFactory,
	podInformer coreinformers.PodInformer,
	recorder record.EventRecorder,
) (*Controller, error) {
	udInformer := ourInformers.Apps().V1alpha1().UnitedDeployments()
	revisionInformer := kubeInformers.Apps().V1().ControllerRevisions()
	c := &Controller{
		Base:           base.New(ControllerName, kind, recorder),
		client:         client,
		udLister:       udInformer.Lister(),
		revisionLister: revisionInformer.Lister(),
		podLister:      podInformer.Lister(),
		history:        revision.History{Client: kubeClient},
		expectations:   expectations.NewControllerExpectations(),
		statuses:       expectations.NewStatusWrites[*appsv1alpha1.UnitedDeploymentStatus](),
	}
	if err := c.Watch(udInformer.Informer(), c.ObjectHandler()); err != nil {
		return nil, err
	}
	src := sources{kube: kubeClient, ours: client, kubeInformers: kubeInformers, ourInformers: ourInformers}
	for _, newKind := range subsetKinds {
		k, informer := newKind(src)
		c.kinds = append(c.kinds, k)
		if err := c.Watch(informer, c.workloadHandler()); err != nil {
			return nil, err
		}
	}
	// Revisions are created and deleted only by this controller; a revision deleted by someone
	// else may still be needed, so look again.
	if err := c.Watch(revisionInformer.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueueOwner}); err != nil {
		return nil, err
	}
	err := c.Watch(podInformer.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueuePodOwner,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.enqueuePodOwner,
	})
	return c, err
}

// Run waits for the caches, starts workers and blocks until ctx is done; it then shuts the queue
// down and returns once the workers have finished.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.Base.Run(ctx, workers, c.syncHandler)
}

// resolveControllerRef returns the UnitedDeployment a controller reference points to, or nil
// when it points to something else or to a UnitedDeployment that no longer exists (a different
// UID means the owner was deleted and a new one took its name).
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1alpha1.UnitedDeployment {
	if !c.IsOurs(ref) {
		return nil
	}
	ud, err := c.udLister.UnitedDeployments(namespace).Get(ref.Name)
	if err != nil || ud.UID != ref.UID {
		return nil
	}
	return ud
}

// enqueueOwner enqueues the UnitedDeployment controlling obj (tombstones accepted).
func (c *Controller) enqueueOwner(obj any) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if ud := c.resolveControllerRef(o.GetNamespace(), metav1.GetControllerOf(o)); ud != nil {
		c.Enqueue(ud)
	}
}

// workloadHandler handles events of subset workloads of every kind: it resolves the owner by
// its controller reference, records observed creations and deletions, and enqueues the owner.
func (c *Controller) workloadHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			o, ok := obj.(metav1.Object)
			if !ok {
				return
			}
			if ud := c.resolveControllerRef(o.GetNamespace(), metav1.GetControllerOf(o)); ud != nil {
				c.expectations.CreationObserved(expectations.ObjectKey(ud))
				c.Enqueue(ud)
			}
		},
		UpdateFunc: c.updateWorkload,
		DeleteFunc: func(obj any) {
			o, err := expectations.ObjectFromDeleteEvent(obj)
			if err != nil {
				utilruntime.HandleError(err)
				return
			}
			if ud := c.resolveControllerRef(o.GetNamespace(), metav1.GetControllerOf(o)); ud != nil {
				c.expectations.DeletionObserved(expectations.ObjectKey(ud))
				c.Enqueue(ud)
			}
		},
	}
}

// updateWorkload enqueues the owner of a changed workload, and its former owner when the
// controller reference changed.
func (c *Controller) updateWorkload(oldObj, curObj any) {
	old, ok1 := oldObj.(metav1.Object)
	cur, ok2 := curObj.(metav1.Object)
	if !ok1 || !ok2 || old.GetResourceVersion() == cur.GetResourceVersion() {
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if ud := c.resolveControllerRef(old.GetNamespace(), oldRef); ud != nil {
			c.Enqueue(ud)
		}
	}
	if ud := c.resolveControllerRef(cur.GetNamespace(), curRef); ud != nil {
		c.Enqueue(ud)
	}
}

// enqueuePodOwner enqueues the UnitedDeployment named by a pod's LabelUnitedDeploymentName.
func (c *Controller) enqueuePodOwner(obj any) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if name := o.GetLabels()[appsv1alpha1.LabelUnitedDeploymentName]; name != "" {
		c.Queue.Add(base.Key{Namespace: o.GetNamespace(), Name: name})
	}
}

// updatePod enqueues the owner when something the status counts changed: labels (subset,
// revision), readiness, phase or deletion.
func (c *Controller) updatePod(oldObj, curObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if podActive(old) == podActive(cur) && podorder.IsReady(old) == podorder.IsReady(cur) &&
		old.Labels[appsv1alpha1.LabelUnitedDeploymentName] == cur.Labels[appsv1alpha1.LabelUnitedDeploymentName] &&
		old.Labels[appsv1alpha1.LabelSubsetName] == cur.Labels[appsv1alpha1.LabelSubsetName] &&
		old.Labels[appsv1alpha1.LabelRevision] == cur.Labels[appsv1alpha1.LabelRevision] {
		return
	}
	if old.Labels[appsv1alpha1.LabelUnitedDeploymentName] != cur.Labels[appsv1alpha1.LabelUnitedDeploymentName] {
		c.enqueuePodOwner(old)
	}
	c.enqueuePodOwner(cur)
}
