package tapp

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsv1informers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appsv1listers "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	appsinformers "github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

// ControllerName names the controller in logs, metrics, the work queue and events.
const ControllerName = "tapp"

// Controller reconciles TApps.
type Controller struct {
	kubeClient kubernetes.Interface
	client     versioned.Interface

	*base.Base

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

	// written remembers the last status write per TApp key (see updateStatus).
	written *expectations.StatusWrites[*appsv1alpha1.TAppStatus]
}

// NewController returns a TApp controller. podInformer, pvcInformer and revisionInformer should
// be the agent's managed (label-filtered) informers: every pod, PVC and ControllerRevision the
// controller creates carries app.kubernetes.io/managed-by=workload-agent.
func NewController(
	kubeClient kubernetes.Interface,
	client versioned.Interface,
	tappInformer appsinformers.TAppInformer,
	podInformer coreinformers.PodInformer,
	pvcInformer coreinformers.PersistentVolumeClaimInformer,
	revisionInformer appsv1informers.ControllerRevisionInformer,
	recorder record.EventRecorder,
) *Controller {
	return newController(kubeClient, client, tappInformer, podInformer, pvcInformer, revisionInformer, recorder, clock.RealClock{})
}

func newController(
	kubeClient kubernetes.Interface,
	client versioned.Interface,
	tappInformer appsinformers.TAppInformer,
	podInformer coreinformers.PodInformer,
	pvcInformer coreinformers.PersistentVolumeClaimInformer,
	revisionInformer appsv1informers.ControllerRevisionInformer,
	recorder record.EventRecorder,
	clk clock.Clock,
) *Controller {
	c := &Controller{
		Base:           base.New(ControllerName, "TApp", recorder),
		kubeClient:     kubeClient,
		client:         client,
		tappLister:     tappInformer.Lister(),
		podLister:      podInformer.Lister(),
		pvcLister:      pvcInformer.Lister(),
		revisionLister: revisionInformer.Lister(),
		history:        revision.History{Client: kubeClient},
		expectations:   expectations.NewUIDTrackingControllerExpectations(expectations.WithClock(clk)),
		writes:         newPendingWrites(clk),
		written:        expectations.NewStatusWrites[*appsv1alpha1.TAppStatus](),
		clock:          clk,
	}
	for _, w := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{tappInformer.Informer(), c.ObjectHandler()},
		{podInformer.Informer(), cache.ResourceEventHandlerFuncs{AddFunc: c.addPod, UpdateFunc: c.updatePod, DeleteFunc: c.deletePod}},
	} {
		if err := c.Watch(w.informer, w.handler); err != nil {
			utilruntime.HandleError(err)
		}
	}
	// PVCs and revisions are read, never watched for changes: the informers only have to have
	// synced.
	c.WaitFor(pvcInformer.Informer().HasSynced, revisionInformer.Informer().HasSynced)
	return c
}

// Run waits for the caches, starts workers and blocks until ctx is done; then it shuts the queue
// down and returns once the workers have finished their current items.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.Base.Run(ctx, workers, c.syncHandler)
}

// resolveControllerRef returns the TApp a controller reference points to, or nil if it points to
// something else or to a TApp that no longer exists (a new TApp of the same name has another UID).
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1alpha1.TApp {
	if !c.IsOurs(ref) {
		return nil
	}
	t, err := c.tappLister.TApps(namespace).Get(ref.Name)
	if err != nil || t.UID != ref.UID {
		return nil
	}
	return t
}

func (c *Controller) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// On a restart the informer lists pods already terminating: a deletion, not a creation.
		c.deletePod(pod)
		return
	}
	t := c.resolveControllerRef(pod.Namespace, metav1.GetControllerOf(pod))
	if t == nil {
		return
	}
	key := expectations.ObjectKey(t)
	c.expectations.CreationObserved(key)
	c.Queue.Add(cache.MetaObjectToName(t))
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		// Periodic resyncs send the same version; the TApp resync covers them.
		return
	}
	if curPod.DeletionTimestamp != nil {
		// A graceful deletion shows first as an update setting deletionTimestamp; count the
		// deletion now so the TApp is not blocked for the whole grace period. The UID-tracking
		// expectations count each pod once, whatever number of events follow.
		c.deletePod(curPod)
		return
	}
	oldRef, curRef := metav1.GetControllerOf(oldPod), metav1.GetControllerOf(curPod)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if t := c.resolveControllerRef(oldPod.Namespace, oldRef); t != nil {
			c.Queue.Add(cache.MetaObjectToName(t))
		}
	}
	if t := c.resolveControllerRef(curPod.Namespace, curRef); t != nil {
		c.Queue.Add(cache.MetaObjectToName(t))
	}
}

func (c *Controller) deletePod(obj any) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	t := c.resolveControllerRef(pod.Namespace, metav1.GetControllerOf(pod))
	if t == nil {
		return
	}
	c.expectations.DeletionObserved(expectations.ObjectKey(t), expectations.ObjectKey(pod))
	c.writes.forget(pod)
	c.Queue.Add(cache.MetaObjectToName(t))
}
