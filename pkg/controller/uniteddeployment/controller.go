package uniteddeployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/worker"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	udinformers "github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

const (
	// ControllerName names the controller in the agent, its work queue and its metrics.
	ControllerName = "uniteddeployment"
	// ComponentName is the source of the controller's Events.
	ComponentName = "uniteddeployment-controller"
	// kind is the kind of the objects the controller reconciles, for metrics and owner references.
	kind = "UnitedDeployment"
)

// controllerKind is the GroupVersionKind of UnitedDeployment.
var controllerKind = appsv1alpha1.SchemeGroupVersion.WithKind(kind)

// Controller reconciles UnitedDeployments.
type Controller struct {
	kubeClient kubernetes.Interface
	client     versioned.Interface

	udLister       listers.UnitedDeploymentLister
	revisionLister appslisters.ControllerRevisionLister
	podLister      corelisters.PodLister
	synced         []cache.InformerSynced

	// adapters holds one adapter per subset kind.
	adapters []Adapter
	history  revision.History

	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *expectations.ControllerExpectations
	recorder     record.EventRecorder
}

// NewController returns a UnitedDeployment controller. It registers its event handlers on the
// informers given; the caller starts the informers (and waits for them, or lets Run wait).
//
// The pod informer only needs the pods the agent manages (label
// app.kubernetes.io/managed-by=workload-agent): subset workloads stamp that label, with the
// UnitedDeployment, subset and revision labels, on their pod templates, and the controller
// counts pods per subset and revision to report updated and ready replicas and to decide when
// the updated revision becomes current.
func NewController(
	kubeClient kubernetes.Interface,
	client versioned.Interface,
	udInformer udinformers.UnitedDeploymentInformer,
	statefulSetInformer appsinformers.StatefulSetInformer,
	deploymentInformer appsinformers.DeploymentInformer,
	tappInformer udinformers.TAppInformer,
	revisionInformer appsinformers.ControllerRevisionInformer,
	podInformer coreinformers.PodInformer,
	recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		kubeClient:     kubeClient,
		client:         client,
		udLister:       udInformer.Lister(),
		revisionLister: revisionInformer.Lister(),
		podLister:      podInformer.Lister(),
		synced: []cache.InformerSynced{
			udInformer.Informer().HasSynced,
			statefulSetInformer.Informer().HasSynced,
			deploymentInformer.Informer().HasSynced,
			tappInformer.Informer().HasSynced,
			revisionInformer.Informer().HasSynced,
			podInformer.Informer().HasSynced,
		},
		adapters: []Adapter{
			&StatefulSetAdapter{Client: kubeClient, Lister: statefulSetInformer.Lister()},
			&DeploymentAdapter{Client: kubeClient, Lister: deploymentInformer.Lister()},
			&TAppAdapter{Client: client, Lister: tappInformer.Lister()},
		},
		history: revision.History{Client: kubeClient},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName},
		),
		expectations: expectations.NewControllerExpectations(),
		recorder:     recorder,
	}

	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{udInformer.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(_, cur interface{}) { c.enqueue(cur) },
			DeleteFunc: c.enqueue,
		}},
		{statefulSetInformer.Informer(), c.workloadHandler()},
		{deploymentInformer.Informer(), c.workloadHandler()},
		{tappInformer.Informer(), c.workloadHandler()},
		{revisionInformer.Informer(), cache.ResourceEventHandlerFuncs{
			// Revisions are created and deleted only by this controller; a revision deleted
			// by someone else may still be needed, so look again.
			DeleteFunc: c.enqueueOwner,
		}},
		{podInformer.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueuePodOwner,
			UpdateFunc: c.updatePod,
			DeleteFunc: c.enqueuePodOwner,
		}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return nil, fmt.Errorf("adding event handler: %w", err)
		}
	}
	return c, nil
}

// Run waits for the caches, starts workers and blocks until ctx is done; it then shuts the queue
// down and returns once the workers have finished.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "controller", ControllerName)

	if !cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.synced...) {
		c.queue.ShutDown()
		return
	}
	worker.Queue[string]{Name: ControllerName, Queue: c.queue, Sync: c.syncHandler}.Run(ctx, workers)
	logger.Info("Shut down controller", "controller", ControllerName)
}

// enqueue adds a UnitedDeployment (or a tombstone of one) to the queue.
func (c *Controller) enqueue(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// resolveControllerRef returns the UnitedDeployment a controller reference points to, or nil
// when it points to something else or to a UnitedDeployment that no longer exists (a different
// UID means the owner was deleted and a new one took its name).
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1alpha1.UnitedDeployment {
	if ref == nil || ref.Kind != kind || ref.APIVersion != appsv1alpha1.SchemeGroupVersion.String() {
		return nil
	}
	ud, err := c.udLister.UnitedDeployments(namespace).Get(ref.Name)
	if err != nil || ud.UID != ref.UID {
		return nil
	}
	return ud
}

// enqueueOwner enqueues the UnitedDeployment controlling obj (tombstones accepted).
func (c *Controller) enqueueOwner(obj interface{}) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if ud := c.resolveControllerRef(o.GetNamespace(), metav1.GetControllerOf(o)); ud != nil {
		c.enqueue(ud)
	}
}

// workloadHandler handles events of subset workloads of every kind: it resolves the owner by
// its controller reference, records observed creations and deletions, and enqueues the owner.
func (c *Controller) workloadHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			o, ok := obj.(metav1.Object)
			if !ok {
				return
			}
			ud := c.resolveControllerRef(o.GetNamespace(), metav1.GetControllerOf(o))
			if ud == nil {
				return
			}
			c.expectations.CreationObserved(expectations.ObjectKey(ud))
			c.enqueue(ud)
		},
		UpdateFunc: func(oldObj, curObj interface{}) {
			old, ok1 := oldObj.(metav1.Object)
			cur, ok2 := curObj.(metav1.Object)
			if !ok1 || !ok2 || old.GetResourceVersion() == cur.GetResourceVersion() {
				return
			}
			oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
			if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
				if ud := c.resolveControllerRef(old.GetNamespace(), oldRef); ud != nil {
					c.enqueue(ud)
				}
			}
			if ud := c.resolveControllerRef(cur.GetNamespace(), curRef); ud != nil {
				c.enqueue(ud)
			}
		},
		DeleteFunc: func(obj interface{}) {
			o, err := expectations.ObjectFromDeleteEvent(obj)
			if err != nil {
				utilruntime.HandleError(err)
				return
			}
			ud := c.resolveControllerRef(o.GetNamespace(), metav1.GetControllerOf(o))
			if ud == nil {
				return
			}
			c.expectations.DeletionObserved(expectations.ObjectKey(ud))
			c.enqueue(ud)
		},
	}
}

// enqueuePodOwner enqueues the UnitedDeployment named by a pod's LabelUnitedDeploymentName.
func (c *Controller) enqueuePodOwner(obj interface{}) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	name := o.GetLabels()[appsv1alpha1.LabelUnitedDeploymentName]
	if name == "" {
		return
	}
	c.queue.Add(o.GetNamespace() + "/" + name)
}

// updatePod enqueues the owner when something the status counts changed: labels (subset,
// revision), readiness, phase or deletion.
func (c *Controller) updatePod(oldObj, curObj interface{}) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := curObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if podActive(old) == podActive(cur) && podReady(old) == podReady(cur) &&
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

// podActive is true for a pod that is neither being deleted nor finished.
func podActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// podReady is true for a pod whose Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// syncHandler reconciles the UnitedDeployment with the given namespace/name key.
func (c *Controller) syncHandler(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("invalid resource key %q: %w", key, err))
		return nil
	}
	ud, err := c.udLister.UnitedDeployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// Its workloads and revisions go with it through their owner references.
		c.expectations.DeleteExpectations(key)
		metrics.ForgetWorkload(kind, namespace, name)
		return nil
	}
	if err != nil {
		return err
	}
	if ud.DeletionTimestamp != nil {
		return nil
	}
	if !c.expectations.SatisfiedExpectations(key) {
		// Workloads created or deleted by an earlier sync are not all in the cache yet; their
		// events will enqueue the UnitedDeployment again.
		klog.FromContext(ctx).V(4).Info("Waiting for subset workloads to be observed", "unitedDeployment", key)
		return nil
	}
	return c.sync(ctx, key, ud)
}

// listRevisions returns the ControllerRevisions controlled by ud, from the cache.
func (c *Controller) listRevisions(ud *appsv1alpha1.UnitedDeployment) ([]*appsv1.ControllerRevision, error) {
	all, err := c.revisionLister.ControllerRevisions(ud.Namespace).List(ownedSelector(ud))
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for _, r := range all {
		if metav1.IsControlledBy(r, ud) {
			out = append(out, r)
		}
	}
	return out, nil
}
