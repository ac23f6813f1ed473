package canary

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/worker"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	informers "github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

const (
	// ControllerName names the controller in the work queue, logs and metrics.
	ControllerName = "canary"
	// EventComponent is the component the controller's Events are reported as.
	EventComponent = "canary-controller"
	// Kind is the kind the controller reconciles, as it appears in metrics.
	Kind = "Canary"

	// deploymentIndex indexes Canaries by the namespace/name of both Deployments they name
	// (spec.stableRef.name and spec.canary.name), so that an event on either finds its Canary.
	deploymentIndex = "canary.apps.workload.dev/deployments"
)

// controllerKind is the GroupVersionKind of the canary Deployment's controller reference.
var controllerKind = v1alpha1.SchemeGroupVersion.WithKind(Kind)

// Controller reconciles Canaries. Build one with NewController and start it with Run.
type Controller struct {
	kubeClient kubernetes.Interface
	client     versioned.Interface

	canaryLister      listers.CanaryLister
	canaryIndexer     cache.Indexer
	canariesSynced    cache.InformerSynced
	deploymentLister  appslisters.DeploymentLister
	deploymentsSynced cache.InformerSynced

	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder record.EventRecorder
	clock    clock.PassiveClock
}

// NewController returns a Canary controller that watches Canaries and Deployments through the
// given shared informers. It registers its event handlers and an index on the Canary informer,
// so it must be called before the informers are started. The Deployment informer must not be
// filtered by labels: stable Deployments are not labelled by the agent.
func NewController(
	kubeClient kubernetes.Interface,
	client versioned.Interface,
	canaryInformer informers.CanaryInformer,
	deploymentInformer appsinformers.DeploymentInformer,
	recorder record.EventRecorder,
) (*Controller, error) {
	c := &Controller{
		kubeClient:        kubeClient,
		client:            client,
		canaryLister:      canaryInformer.Lister(),
		canaryIndexer:     canaryInformer.Informer().GetIndexer(),
		canariesSynced:    canaryInformer.Informer().HasSynced,
		deploymentLister:  deploymentInformer.Lister(),
		deploymentsSynced: deploymentInformer.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: ControllerName},
		),
		recorder: recorder,
		clock:    clock.RealClock{},
	}

	if _, exists := c.canaryIndexer.GetIndexers()[deploymentIndex]; !exists {
		if err := canaryInformer.Informer().AddIndexers(cache.Indexers{deploymentIndex: indexByDeployment}); err != nil {
			return nil, fmt.Errorf("indexing Canaries by Deployment: %w", err)
		}
	}
	if _, err := canaryInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueCanary,
		UpdateFunc: func(_, obj interface{}) { c.enqueueCanary(obj) },
		DeleteFunc: c.enqueueCanary,
	}); err != nil {
		return nil, err
	}
	if _, err := deploymentInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.handleDeployment,
		UpdateFunc: func(old, obj interface{}) {
			if old.(*appsv1.Deployment).ResourceVersion == obj.(*appsv1.Deployment).ResourceVersion {
				return // a resync: the Canary's own resync covers it
			}
			c.handleDeployment(obj)
		},
		DeleteFunc: c.handleDeployment,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// indexByDeployment returns the namespace/name keys of the stable and the canary Deployment of a
// Canary.
func indexByDeployment(obj interface{}) ([]string, error) {
	cn, ok := obj.(*v1alpha1.Canary)
	if !ok {
		return nil, nil
	}
	var keys []string
	if n := cn.Spec.StableRef.Name; n != "" {
		keys = append(keys, cn.Namespace+"/"+n)
	}
	if n := cn.Spec.Canary.Name; n != "" && n != cn.Spec.StableRef.Name {
		keys = append(keys, cn.Namespace+"/"+n)
	}
	return keys, nil
}

// Run waits for the caches to sync, starts workers and blocks until ctx is done; it then shuts
// the queue down and returns once the workers have finished the items they were processing.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx).WithValues("controller", ControllerName)
	ctx = klog.NewContext(ctx, logger)

	if !cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.canariesSynced, c.deploymentsSynced) {
		c.queue.ShutDown()
		return
	}
	logger.Info("Starting workers", "count", max(workers, 1))
	worker.Queue[cache.ObjectName]{Name: ControllerName, Queue: c.queue, Sync: c.syncHandler, Lagging: cacheLagging}.Run(ctx, workers)
	logger.Info("Shut down workers")
}

// cacheLagging reports errors that only mean the cache lagged this controller's own writes: the
// informer event is on its way, so they are requeued without an error log.
func cacheLagging(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || errors.Is(err, errStale)
}

func (c *Controller) enqueueCanary(obj interface{}) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// handleDeployment enqueues the Canaries a Deployment belongs to: the Canary that controls it
// (a canary Deployment) and every Canary that names it as its stable or canary Deployment.
func (c *Controller) handleDeployment(obj interface{}) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("unexpected object %T", obj))
			return
		}
		if d, ok = tombstone.Obj.(*appsv1.Deployment); !ok {
			utilruntime.HandleError(fmt.Errorf("unexpected tombstone object %T", tombstone.Obj))
			return
		}
	}
	if ref := metav1.GetControllerOf(d); ref != nil && ref.Kind == Kind && ref.APIVersion == v1alpha1.SchemeGroupVersion.String() {
		c.queue.Add(cache.ObjectName{Namespace: d.Namespace, Name: ref.Name})
	}
	canaries, err := c.canaryIndexer.ByIndex(deploymentIndex, d.Namespace+"/"+d.Name)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, obj := range canaries {
		c.enqueueCanary(obj)
	}
}

// syncHandler reconciles one Canary: it reads the Canary and its Deployments from the listers,
// makes the writes its state calls for and records the outcome in status.
func (c *Controller) syncHandler(ctx context.Context, key cache.ObjectName) (err error) {
	shared, err := c.canaryLister.Canaries(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		metrics.ForgetWorkload(Kind, key.Namespace, key.Name)
		return nil
	}
	if err != nil {
		return err
	}
	if shared.DeletionTimestamp != nil {
		return c.finalize(ctx, shared)
	}

	r := &reconciler{
		c:      c,
		ctx:    ctx,
		logger: klog.FromContext(ctx).WithValues("canary", key),
		canary: shared.DeepCopy(),
		now:    metav1.NewTime(c.clock.Now()).Rfc3339Copy(),
	}
	r.status = *r.canary.Status.DeepCopy()
	// The finalizer goes on before anything else, so that no canary Deployment exists for a
	// Canary that can be deleted without it.
	if !slices.Contains(r.canary.Finalizers, v1alpha1.FinalizerOrphanCanary) {
		if gone, err := r.addFinalizer(); gone || err != nil {
			return err
		}
	}
	if err := r.reconcile(); err != nil {
		return err
	}
	r.finishStatus()
	metrics.SetRolloutProgress(Kind, key.Namespace, key.Name, r.canary.Spec.Replicas,
		r.status.CanaryReplicas, r.status.CanaryAvailable+r.status.StableAvailable)

	// The status goes first, with the resourceVersion read: when the cache was stale the API
	// server refuses it with a conflict and nothing is written to a Deployment. An unchanged
	// status is still sent when Deployments are to be written, for that check alone (the API
	// server makes no change of it).
	if !statusEqual(&shared.Status, &r.status) || len(r.writes) > 0 {
		updated := r.canary.DeepCopy()
		updated.Status = r.status
		if _, err := c.client.AppsV1alpha1().Canaries(updated.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating status of Canary %s: %w", key, err)
		}
	}
	for _, e := range r.events {
		e()
	}
	for _, w := range r.writes {
		if err := w.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", w.what, err)
		}
	}
	return nil
}

// event records an Event on the Canary about a decision of this sync; it is sent once the
// sync's status is committed.
func (r *reconciler) event(eventType, reason, format string, args ...interface{}) {
	r.events = append(r.events, func() { r.emit(eventType, reason, format, args...) })
}

// emit sends an Event on the Canary now.
func (r *reconciler) emit(eventType, reason, format string, args ...interface{}) {
	if r.c.recorder != nil {
		r.c.recorder.Eventf(r.canary, eventType, reason, format, args...)
	}
}

// decide appends a Deployment write to the sync's writes.
func (r *reconciler) decide(what string, do func(ctx context.Context) error) {
	r.writes = append(r.writes, write{what: what, do: do})
}

// isOwnedBy reports whether d is controlled by the Canary cn.
func isOwnedBy(d *appsv1.Deployment, cn *v1alpha1.Canary) bool {
	ref := metav1.GetControllerOf(d)
	return ref != nil && ref.UID == cn.UID && ref.Kind == Kind
}

// replicasOf returns a Deployment's spec.replicas (1 when unset, as the API server defaults it).
func replicasOf(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return v1alpha1.ReplicasOrDefault(d.Spec.Replicas)
}

// statusObserved reports whether the Deployment controller has observed d's latest spec, so that
// d's status counts describe it.
func statusObserved(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation
}

// templateLabelsSelected reports whether a Deployment's selector still selects the pod labels of
// a template, which the API server requires of every Deployment.
func templateLabelsSelected(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return !s.Empty() && s.Matches(labels.Set(t.Labels))
}
