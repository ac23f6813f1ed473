package canary

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appslisters "k8s.io/client-go/listers/apps/v1"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeinformers"

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

	kubeClient kubeclient.Interface
	client     versioned.Interface
	// statusClient writes the Canaries' statuses, through a client budget of their own
	// (docs/architecture.md, "Two client budgets and the TApp's status queue").
	statusClient versioned.Interface

	canaryLister     listers.CanaryLister
	canaryIndexer    cache.Indexer
	deployments      deploymentSource
	targets          map[string]targetKind // the workloads Canaries target, by kind (inplace_kind.go)
	traffic          *trafficClients       // nil without the Gateway API (routes.go)
	deploymentLister appslisters.DeploymentLister
	hpaLister        autoscalinglisters.HorizontalPodAutoscalerLister // nil without Config.HPAs
	clock            clock.PassiveClock

	// runner and analysisEnv take the measurements of the checks of a baking step (analysis.go).
	runner      *analysis.Runner
	analysisEnv analysis.Env
	// templates are the analysis templates Canaries name (templates.go).
	templates templateSource

	// mu guards pending, the controller's Deployment writes the cache does not show yet, by
	// Deployment key (see observe); statuses are its last status write of each Canary while
	// the cache lags it (see lastWritten).
	mu       sync.Mutex
	pending  map[string]pendingWrite
	statuses *expectations.StatusWrites[*writtenStatus]
	// progressAt is when each Canary's status was last written; progressInterval the least time
	// between two writes that differ only in progress (status.go; 0: no such wait).
	progressAt       map[string]time.Time
	progressInterval time.Duration
	// endpointWaits (guarded by mu) is, by Canary key, the whole route move waiting for its Service's
	// endpoints (endpoints.go).
	endpointWaits map[string]endpointWait
	wholeSteps    bool // Config.StableFollowsWholeSteps

	// contests are the objects another field manager keeps changing back (contest.go).
	contests contests
}

// Config is what a Canary controller reads and writes through.
type Config struct {
	KubeClient kubeclient.Interface
	Client     versioned.Interface
	// StatusClient writes the Canaries' statuses (the agent: ctrl.Context.Statuses, a client
	// budget of their own); nil: Client.
	StatusClient versioned.Interface
	Canaries     informers.CanaryInformer
	// Deployments holds the canary Deployments (those with the managed-by label) and, unless
	// WatchByName, every Deployment a Canary names.
	Deployments kubeinformers.DeploymentInformer
	// WatchByName makes the controller watch each Deployment, StatefulSet and DaemonSet a
	// Canary names by its name (the agent: it caches no unrelated object). Without it the
	// Deployments informer must hold the Deployments Canaries name, and StatefulSets and
	// DaemonSets are not released.
	WatchByName bool
	// UnitedDeployments and TApps are the agent's shared informers of those kinds (their own
	// controllers cache every one anyway); nil: that kind is not released.
	UnitedDeployments informers.UnitedDeploymentInformer
	TApps             informers.TAppInformer
	// Pods holds the canary's pods, for podHealth checks; nil (the agent): a podHealth check
	// lists them from the API server through KubeClient when it measures.
	Pods kubeinformers.PodInformer
	// AnalysisTemplates and ClusterAnalysisTemplates are the templates spec.analysis entries
	// name; nil: an entry naming that kind waits, as for a missing template.
	AnalysisTemplates        informers.AnalysisTemplateInformer
	ClusterAnalysisTemplates informers.ClusterAnalysisTemplateInformer
	// Gateway and HTTPRoutes let the controller route traffic (routes.go); nil when the cluster
	// has no Gateway API: every Canary with traffic routing then says GatewayAPIUnavailable.
	Gateway    gatewayclient.GatewayV1Interface
	HTTPRoutes kubeinformers.HTTPRouteInformer
	// HPAs lets the controller refuse a HorizontalPodAutoscaler on a Deployment whose replicas a
	// release sets (autoscale.go); nil: it is not told, and its writes meet the contest rule.
	HPAs     kubeinformers.HorizontalPodAutoscalerInformer
	Recorder record.EventRecorder
	// Clock is the controller's time; nil for the real clock.
	Clock clock.PassiveClock
	// ProgressInterval is the least time between two status writes of a Canary that differ only
	// in progress (pod counts and the messages that say them); 0 writes each at once. The agent
	// sets ProgressInterval (the constant).
	ProgressInterval time.Duration
	// StableFollowsWholeSteps makes the stable Deployment give pods up only once every canary pod
	// asked for (up to the step) is available: one write per canary scale-up, not one per change
	// of the canary's available count (pair_scale.go, canaryWhole). The agent sets it.
	StableFollowsWholeSteps bool
}

// NewController returns a Canary controller over cfg. It registers its event handlers and
// indexes on the informers, so it must be called before they are started.
func NewController(cfg Config) (*Controller, error) {
	runner, err := analysis.NewRunner()
	if err != nil {
		return nil, fmt.Errorf("compiling the analysis conditions' environment: %w", err)
	}
	c := &Controller{
		Base:             base.New(ControllerName, Kind, cfg.Recorder),
		kubeClient:       cfg.KubeClient,
		client:           cfg.Client,
		statusClient:     cfg.StatusClient,
		canaryLister:     cfg.Canaries.Lister(),
		canaryIndexer:    cfg.Canaries.Informer().GetIndexer(),
		deployments:      listerDeployments{cfg.Deployments.Lister()},
		deploymentLister: cfg.Deployments.Lister(),
		clock:            cfg.Clock,
		runner:           runner,
		analysisEnv:      analysis.Env{Client: cfg.KubeClient},
		pending:          map[string]pendingWrite{},
		statuses:         expectations.NewStatusWrites[*writtenStatus](),
		progressAt:       map[string]time.Time{},
		endpointWaits:    map[string]endpointWait{},
		progressInterval: cfg.ProgressInterval,
		wholeSteps:       cfg.StableFollowsWholeSteps,
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.statusClient == nil {
		c.statusClient = c.client
	}
	c.Lagging = cacheLagging
	// A promote or an edit of the Canary (a new generation) is answered ahead of the syncs the
	// pods of other releases queue (docs/architecture.md, "The spec queue").
	c.UseSpecQueue()
	if err := c.watchCanaries(cfg.Canaries, cfg.Deployments); err != nil {
		return nil, err
	}
	if cfg.WatchByName {
		c.watchNamed(cfg.KubeClient)
	}
	if err := c.watchTemplates(cfg.Canaries, cfg.AnalysisTemplates, cfg.ClusterAnalysisTemplates); err != nil {
		return nil, err
	}
	if err := c.watchTargets(cfg); err != nil {
		return nil, err
	}
	if cfg.HTTPRoutes != nil {
		if err := c.enableTraffic(cfg.Gateway, cfg.HTTPRoutes); err != nil {
			return nil, err
		}
	}
	if cfg.HPAs != nil {
		if err := c.watchAutoscalers(cfg.HPAs); err != nil {
			return nil, err
		}
	}
	if cfg.Pods != nil {
		c.analysisEnv.Pods = cfg.Pods.Lister()
		c.WaitFor(cfg.Pods.Informer().HasSynced)
	}
	return c, nil
}

// watchCanaries indexes the Canaries by the Deployments and targets they name, and enqueues
// them on their events and on those of their Deployments.
func (c *Controller) watchCanaries(canaries informers.CanaryInformer, deployments kubeinformers.DeploymentInformer) error {
	for name, index := range map[string]cache.IndexFunc{deploymentIndex: indexByDeployment, targetIndex: indexByTarget} {
		if _, exists := c.canaryIndexer.GetIndexers()[name]; exists {
			continue
		}
		if err := canaries.Informer().AddIndexers(cache.Indexers{name: index}); err != nil {
			return fmt.Errorf("indexing Canaries (%s): %w", name, err)
		}
	}
	if err := c.Watch(canaries.Informer(), c.ObjectHandler()); err != nil {
		return err
	}
	if err := c.Watch(deployments.Informer(), c.deploymentHandler()); err != nil {
		return err
	}
	if err := c.Watch(canaries.Informer(), c.claimantsHandler()); err != nil { // bluegreen_claims.go
		return err
	}
	return c.Watch(canaries.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: c.releaseCanary})
}

// watchTargets makes the controller release the kinds cfg has informers of.
func (c *Controller) watchTargets(cfg Config) error {
	if cfg.UnitedDeployments != nil {
		if err := c.watchUnitedDeployments(cfg.UnitedDeployments); err != nil {
			return err
		}
	}
	if cfg.TApps != nil {
		return c.readTApps(cfg.TApps)
	}
	return nil
}

// watchNamed makes the controller read the Deployments Canaries name through a watch of each
// name (watchedDeployments) next to its Deployment informer, which then needs to hold only the
// canary Deployments (managed-by); StatefulSets and DaemonSets are watched by name too.
func (c *Controller) watchNamed(kube kubeclient.Interface) {
	w := newWatchedDeployments(kube, c.deploymentLister)
	w.setHandler(c.deploymentHandler())
	c.deployments, c.deploymentLister = w, w.Lister()
	s := newWatchedStatefulSets(kube)
	s.setHandler(c.targetHandler(kindStatefulSet))
	c.setStatefulSetSource(s)
	c.watchDaemonSets(kube) // inplace_daemonset.go
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
		c.deployments.release(cache.MetaObjectToName(o))
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
	if w, ok := c.deployments.(*watchedDeployments); ok {
		go w.run(ctx)
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
