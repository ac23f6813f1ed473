package uniteddeployment

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/podorder"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

const (
	// ControllerName names the controller in logs, metrics, the work queue and events.
	ControllerName = "uniteddeployment"
	// Kind is the kind the controller reconciles, in metrics, owner references and Events.
	Kind = "UnitedDeployment"
)

// controllerKind is the GroupVersionKind of UnitedDeployment.
var controllerKind = appsv1alpha1.SchemeGroupVersion.WithKind(Kind)

// Controller reconciles UnitedDeployments.
type Controller struct {
	*base.Base
	client versioned.Interface
	// statusClient writes statuses, through a client budget of their own (ctrl.Context.Statuses).
	statusClient versioned.Interface

	udLister       listers.UnitedDeploymentLister
	revisionLister appslisters.ControllerRevisionLister
	podLister      corelisters.PodLister

	// kinds holds one entry per subset kind, in the order the template's fields are checked.
	kinds   []workloadKind
	history revision.History
	// fleet reaches the member clusters subsets name; nil when the agent has none (tests).
	fleet *fleet.Registry
	clock clock.PassiveClock

	// expectations holds, per UnitedDeployment key, the workload creations and deletions issued
	// but not yet observed; statuses its last status write while the cache lags it.
	expectations *expectations.ControllerExpectations
	statuses     *expectations.StatusWrites[*appsv1alpha1.UnitedDeploymentStatus]
	// workloadEvents handles the events of subset workloads of every kind (owners resolved by
	// base.Owners, creations and deletions observed).
	workloadEvents cache.ResourceEventHandler
}

// NewController returns a UnitedDeployment controller built from the agent's context (every
// controller is built so): UnitedDeployments and TApps from c.Informers; StatefulSets,
// Deployments, ControllerRevisions and pods from c.ManagedInformers, since every subset workload,
// revision and pod the controller creates carries app.kubernetes.io/managed-by=workload-agent
// (workloadLabels, revisionPlan.plan, preparePodTemplate): the agent's memory does not grow with
// the cluster's other StatefulSets, Deployments and revisions. Events as EventComponent; time
// (the expectations' expiry) from c.Clock.
//
// The controller counts pods per subset and revision to report updated and ready replicas and to
// decide when the updated revision becomes current: subset workloads stamp the managed-by label,
// with the UnitedDeployment, subset and revision labels, on their pod templates.
func NewController(c *ctrl.Context) (*Controller, error) {
	udInformer := c.Informers.Apps().V1alpha1().UnitedDeployments()
	revisionInformer := c.ManagedInformers.ControllerRevisions()
	podInformer := c.ManagedInformers.Pods()
	ctl := &Controller{
		Base:           base.New(ControllerName, Kind, c.EventRecorder(EventComponent)),
		client:         c.Client,
		statusClient:   c.Statuses(),
		udLister:       udInformer.Lister(),
		revisionLister: revisionInformer.Lister(),
		podLister:      podInformer.Lister(),
		history:        revision.History{Client: c.KubeClient},
		expectations:   expectations.NewControllerExpectations(expectations.WithClock(c.Clock)),
		statuses:       expectations.NewStatusWrites[*appsv1alpha1.UnitedDeploymentStatus](),
		fleet:          c.Fleet,
		clock:          c.Clock,
	}
	if ctl.clock == nil {
		ctl.clock = clock.RealClock{}
	}
	ctl.Lagging = quietRequeue
	if ctl.fleet != nil {
		// A member's subset workload changed, or a ClusterProfile (its health, its access).
		ctl.fleet.OnWorkload(ctl.memberWorkloadEvent)
		ctl.fleet.OnProfile(ctl.enqueueProfileUsers)
	}
	owners := base.NewOwners(ctl.Base, func(namespace, name string) (*appsv1alpha1.UnitedDeployment, error) {
		return ctl.udLister.UnitedDeployments(namespace).Get(name)
	})
	ctl.workloadEvents = owners.Handler(base.OwnedEvents[*appsv1alpha1.UnitedDeployment]{
		Created: func(ud *appsv1alpha1.UnitedDeployment, _ metav1.Object) {
			ctl.expectations.CreationObserved(expectations.ObjectKey(ud))
		},
		Deleted: func(ud *appsv1alpha1.UnitedDeployment, _ metav1.Object) {
			ctl.expectations.DeletionObserved(expectations.ObjectKey(ud))
		},
	})
	if err := ctl.Watch(udInformer.Informer(), ctl.ObjectHandler()); err != nil {
		return nil, err
	}
	for _, newKind := range subsetKinds {
		k, informer := newKind(c)
		ctl.kinds = append(ctl.kinds, k)
		if err := ctl.Watch(informer, ctl.workloadEvents); err != nil {
			return nil, err
		}
	}
	// Revisions are created and deleted only by this controller; a revision deleted by someone
	// else may still be needed, so look again.
	if err := ctl.Watch(revisionInformer.Informer(), cache.ResourceEventHandlerFuncs{DeleteFunc: owners.EnqueueOwner}); err != nil {
		return nil, err
	}
	err := ctl.Watch(podInformer.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    ctl.enqueuePodOwner,
		UpdateFunc: ctl.updatePod,
		DeleteFunc: ctl.enqueuePodOwner,
	})
	return ctl, err
}

// Run waits for the caches, starts workers and blocks until ctx is done; it then shuts the queue
// down and returns once the workers have finished.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.Base.Run(ctx, workers, c.syncHandler)
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
