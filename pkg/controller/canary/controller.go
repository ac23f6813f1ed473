package canary

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	informers "github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

const (
	// ControllerName names the controller in the work queue, logs and metrics.
	ControllerName = "canary"
	// Kind is the kind the controller reconciles, as it appears in metrics.
	Kind = "Canary"

	// deploymentIndex indexes Canaries by the namespace/name of both Deployments they name
	// (spec.stableRef.name and spec.canary.name), so that an event on either finds its Canary.
	deploymentIndex = "canary.apps.workload.dev/deployments"
)

// EventComponent is the component the controller's Events are reported as.
var EventComponent = base.EventComponent(ControllerName)

// controllerKind is the GroupVersionKind of the canary Deployment's controller reference.
var controllerKind = v1alpha1.SchemeGroupVersion.WithKind(Kind)

// Controller reconciles Canaries. Build one with NewController and start it with Run.
type Controller struct {
	*base.Base

	kubeClient kubernetes.Interface
	client     versioned.Interface

	canaryLister     listers.CanaryLister
	canaryIndexer    cache.Indexer
	deployments      Deployments
	targets          map[string]targetKind // the workloads Canaries target, by kind (target.go)
	traffic          *trafficClients       // nil without the Gateway API (routes.go)
	deploymentLister appslisters.DeploymentLister
	clock            clock.PassiveClock

	// runner and analysisEnv take the measurements of the checks of a baking step (analysis.go).
	runner      *analysis.Runner
	analysisEnv analysis.Env

	// mu guards the controller's own last writes, which the cache may not show yet: pending
	// holds its Deployment writes by Deployment key (see observe), written its last status
	// write by Canary key (see lastWritten).
	mu      sync.Mutex
	pending map[string]pendingWrite
	written map[string]writtenStatus

	// contests are the objects another field manager keeps changing back (contest.go).
	contests contests
}

// NewController returns a Canary controller that watches Canaries and Deployments through the
// given shared informers. It registers its event handlers and an index on the Canary informer,
// so it must be called before the informers are started. The Deployment informer must hold
// every Deployment a Canary names, unless WatchNamed makes the controller watch those by name
// (then the informer needs only the managed-by ones, the canary Deployments).
func NewController(
	kubeClient kubernetes.Interface,
	client versioned.Interface,
	canaryInformer informers.CanaryInformer,
	deploymentInformer appsinformers.DeploymentInformer,
	recorder record.EventRecorder,
) (*Controller, error) {
	runner, err := analysis.NewRunner()
	if err != nil {
		return nil, fmt.Errorf("compiling the analysis conditions' environment: %w", err)
	}
	c := &Controller{
		Base:             base.New(ControllerName, Kind, recorder),
		kubeClient:       kubeClient,
		client:           client,
		canaryLister:     canaryInformer.Lister(),
		canaryIndexer:    canaryInformer.Informer().GetIndexer(),
		deployments:      ListerDeployments(deploymentInformer.Lister()),
		deploymentLister: deploymentInformer.Lister(),
		clock:            clock.RealClock{},
		runner:           runner,
		analysisEnv:      analysis.Env{Client: kubeClient},
		pending:          map[string]pendingWrite{},
		written:          map[string]writtenStatus{},
	}
	c.Lagging = cacheLagging

	if _, exists := c.canaryIndexer.GetIndexers()[deploymentIndex]; !exists {
		if err := canaryInformer.Informer().AddIndexers(cache.Indexers{deploymentIndex: indexByDeployment}); err != nil {
			return nil, fmt.Errorf("indexing Canaries by Deployment: %w", err)
		}
	}
	if _, exists := c.canaryIndexer.GetIndexers()[targetIndex]; !exists {
		if err := canaryInformer.Informer().AddIndexers(cache.Indexers{targetIndex: indexByTarget}); err != nil {
			return nil, fmt.Errorf("indexing Canaries by target: %w", err)
		}
	}
	if err := c.Watch(canaryInformer.Informer(), c.ObjectHandler()); err != nil {
		return nil, err
	}
	if err := c.Watch(deploymentInformer.Informer(), c.deploymentHandler()); err != nil {
		return nil, err
	}
	if err := c.Watch(canaryInformer.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.releaseCanary}); err != nil {
		return nil, err
	}
	return c, nil
}

// WatchNamed makes the controller read the Deployments Canaries name through a watch of each
// name (WatchedDeployments) next to its Deployment informer, which then needs to hold only the
// canary Deployments (managed-by).
func (c *Controller) WatchNamed(kube kubernetes.Interface) {
	w := NewWatchedDeployments(kube, c.deploymentLister)
	w.SetHandler(c.deploymentHandler())
	c.deployments, c.deploymentLister = w, w.Lister()
	s := newWatchedStatefulSets(kube)
	s.SetHandler(c.targetHandler(kindStatefulSet))
	c.SetStatefulSetSource(s)
	c.watchDaemonSets(kube) // target_daemonset.go
}

// deploymentHandler enqueues the Canaries of a Deployment on its events.
func (c *Controller) deploymentHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: c.handleDeployment,
		UpdateFunc: func(old, obj interface{}) {
			if old.(*appsv1.Deployment).ResourceVersion == obj.(*appsv1.Deployment).ResourceVersion {
				return // a resync: the Canary's own resync covers it
			}
			c.handleDeployment(obj)
		},
		DeleteFunc: c.handleDeployment,
	}
}

// releaseCanary stops the watches of the names a deleted Canary referenced.
func (c *Controller) releaseCanary(obj interface{}) {
	if o, err := expectations.ObjectFromDeleteEvent(obj); err == nil {
		c.deployments.Release(cache.MetaObjectToName(o))
	}
}

// indexByDeployment returns the namespace/name keys of the Deployments a Canary's release reads
// by name (its stable and canary Deployments, or its target and temporary canary Deployment).
func indexByDeployment(obj interface{}) ([]string, error) {
	cn, ok := obj.(*v1alpha1.Canary)
	if !ok {
		return nil, nil
	}
	var keys []string
	for _, n := range releaseFor(cn).deploymentNames(cn) {
		if k := cn.Namespace + "/" + n; n != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// Run waits for the caches to sync, starts workers and blocks until ctx is done; it then shuts
// the queue down and returns once the workers have finished the items they were processing.
func (c *Controller) Run(ctx context.Context, workers int) {
	if w, ok := c.deployments.(*WatchedDeployments); ok {
		go w.Run(ctx)
	}
	for _, k := range c.targets {
		go k.run(ctx)
	}
	c.Base.Run(ctx, workers, c.syncHandler)
}

// cacheLagging reports errors that only mean the cache lagged this controller's own writes: the
// informer event is on its way, so they are requeued without an error log.
func cacheLagging(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || errors.Is(err, errStale) || errors.Is(err, errNotListed)
}

// handleDeployment enqueues the Canaries a Deployment belongs to: the Canary that controls it
// (a canary Deployment) and every Canary that names it as its stable or canary Deployment.
func (c *Controller) handleDeployment(obj interface{}) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if ref := metav1.GetControllerOf(o); c.IsOurs(ref) {
		c.Queue.Add(cache.ObjectName{Namespace: o.GetNamespace(), Name: ref.Name})
	}
	canaries, err := c.canaryIndexer.ByIndex(deploymentIndex, o.GetNamespace()+"/"+o.GetName())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, obj := range canaries {
		c.Enqueue(obj)
	}
}
