package tapp

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1listers "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	appslisters "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

const (
	// ControllerName names the controller in logs, metrics, the work queue and events.
	ControllerName = "tapp"
	// Kind is the kind the controller reconciles, in metrics, owner references and Events.
	Kind = "TApp"
)

// Controller reconciles TApps.
type Controller struct {
	kubeClient kubeclient.Interface
	client     versioned.Interface
	// statusClient writes statuses, through a client budget of their own (ctrl.Context.Statuses).
	statusClient versioned.Interface

	// Base holds the main queue, fed by TApp events; status the status queue, fed by pod events
	// (statusqueue.go); running keeps the two from syncing one TApp at once.
	*base.Base
	status  *base.Base
	running *exclusive

	tappLister     appslisters.TAppLister
	podLister      corelisters.PodLister
	pvcLister      corelisters.PersistentVolumeClaimLister
	revisionLister appsv1listers.ControllerRevisionLister
	history        revision.History

	// expectations holds, per TApp key, the pod creations and (by pod key) deletions issued but
	// not yet observed by the pod informer.
	expectations *expectations.UIDTrackingControllerExpectations
	// writes holds the pod patches issued but not yet observed.
	writes *pendingWrites
	clock  clock.Clock

	// statuses remembers the last status write per TApp key while the cache lags it (see
	// updateStatus).
	statuses *expectations.StatusWrites[*appsv1alpha1.TAppStatus]
	// podEvents handles the events of the TApps' pods (owners resolved by base.Owners).
	podEvents cache.ResourceEventHandler
}

// NewController returns a TApp controller built from the agent's context (every controller is
// built so): TApps from c.Informers; pods, PVCs and ControllerRevisions from c.ManagedInformers,
// since every pod, claim and revision the controller creates carries
// app.kubernetes.io/managed-by=workload-agent; Events as EventComponent; time from c.Clock.
func NewController(c *ctrl.Context) (*Controller, error) {
	tappInformer := c.Informers.Apps().V1alpha1().TApps()
	podInformer := c.ManagedInformers.Pods()
	pvcInformer := c.ManagedInformers.PersistentVolumeClaims()
	revisionInformer := c.ManagedInformers.ControllerRevisions()
	ctl := &Controller{
		Base:           base.New(ControllerName, Kind, c.EventRecorder(EventComponent)),
		status:         base.New(StatusQueueName, Kind, c.EventRecorder(EventComponent)),
		running:        newExclusive(),
		kubeClient:     c.KubeClient,
		client:         c.Client,
		statusClient:   c.Statuses(),
		tappLister:     tappInformer.Lister(),
		podLister:      podInformer.Lister(),
		pvcLister:      pvcInformer.Lister(),
		revisionLister: revisionInformer.Lister(),
		history:        revision.History{Client: c.KubeClient},
		expectations:   expectations.NewUIDTrackingControllerExpectations(expectations.WithClock(c.Clock)),
		writes:         newPendingWrites(c.Clock),
		statuses:       expectations.NewStatusWrites[*appsv1alpha1.TAppStatus](),
		clock:          c.Clock,
	}
	// Pod events go to the status queue, which hands the key to the main queue when the sync
	// has more to write than the status.
	owners := base.NewOwners(ctl.status, func(namespace, name string) (*appsv1alpha1.TApp, error) {
		return ctl.tappLister.TApps(namespace).Get(name)
	})
	ctl.podEvents = owners.Handler(base.OwnedEvents[*appsv1alpha1.TApp]{
		Created: func(t *appsv1alpha1.TApp, _ metav1.Object) {
			ctl.expectations.CreationObserved(expectations.ObjectKey(t))
		},
		Deleted: ctl.podDeleted,
		// A pod being deleted counts as deleted at once, so that the TApp is not blocked for
		// its whole grace period; the UID-tracking expectations count each pod once, whatever
		// number of events follow.
		DeletingIsDeleted: true,
	})
	if err := ctl.Watch(tappInformer.Informer(), ctl.ObjectHandler()); err != nil {
		return nil, err
	}
	if err := ctl.Watch(podInformer.Informer(), ctl.podEvents); err != nil {
		return nil, err
	}
	// PVCs and revisions are read, never watched for changes: the informers only have to have
	// synced.
	ctl.WaitFor(pvcInformer.Informer().HasSynced, revisionInformer.Informer().HasSynced)
	ctl.status.WaitFor(tappInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
		pvcInformer.Informer().HasSynced, revisionInformer.Informer().HasSynced)
	return ctl, nil
}

// Run waits for the caches, starts workers on both queues and blocks until ctx is done; then it
// shuts the queues down and returns once the workers have finished their items.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	wg.Go(func() { c.status.Run(ctx, workers, c.syncStatus) })
	c.Base.Run(ctx, workers, c.syncHandler)
	wg.Wait()
}

// podDeleted records a pod of t as gone, and forgets the writes to it still awaited.
func (c *Controller) podDeleted(t *appsv1alpha1.TApp, obj metav1.Object) {
	c.expectations.DeletionObserved(expectations.ObjectKey(t), expectations.ObjectKey(obj))
	if pod, ok := obj.(*corev1.Pod); ok {
		c.writes.forget(pod)
	}
}
