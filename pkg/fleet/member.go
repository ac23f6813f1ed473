package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeinformers"
)

// Member is one member cluster: its clients and the caches of the subset workloads the agent put
// there.
type Member struct {
	// Profile is the ClusterProfile's namespace/name.
	Profile string
	Clients
	// StatefulSets and Deployments cache the member's subset workloads of those kinds.
	StatefulSets appslisters.StatefulSetLister
	Deployments  appslisters.DeploymentLister

	health      *health
	fingerprint string
	cancel      context.CancelFunc
	synced      []cache.InformerSynced

	// The TApp informer starts only once the member is seen to serve TApps (TApps).
	mu       sync.Mutex
	ctx      context.Context
	opts     Options
	notify   func(namespace, name string, e Event)
	tapps    listers.TAppLister
	tappSync cache.InformerSynced
	// refused is the member's answer that it serves no TApps, and when it was given: kept for
	// TAppRecheck, or until its ClusterProfile changes (forgetRefusal).
	refused   error
	refusedAt time.Time
	now       func() time.Time
}

// TAppRecheck is how long a member's answer that it serves no TApps is believed: without it
// every sync of a UnitedDeployment with a TApp subset there would ask discovery again. A
// member whose workload CRDs are installed meanwhile is seen within this time, or at once when
// its ClusterProfile changes.
const TAppRecheck = time.Minute

func newMember(key string, c Clients, h *health, fp string, cancel context.CancelFunc) *Member {
	return &Member{Profile: key, Clients: c, health: h, fingerprint: fp, cancel: cancel, now: time.Now}
}

// watch starts the member's StatefulSet and Deployment informers, filtered by MemberSelector.
func (m *Member) watch(ctx context.Context, opts Options, notify func(namespace, name string, e Event)) error {
	m.mu.Lock()
	m.ctx, m.opts, m.notify = ctx, opts, notify
	m.mu.Unlock()
	f := kubeinformers.New(m.Kube, opts.Resync, kubeinformers.WithNamespace(opts.Namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = MemberSelector }),
		kubeinformers.WithTransform(opts.Transform))
	sts, deps := f.StatefulSets(), f.Deployments()
	m.StatefulSets, m.Deployments = sts.Lister(), deps.Lister()
	for _, inf := range []cache.SharedIndexInformer{sts.Informer(), deps.Informer()} {
		if _, err := inf.AddEventHandler(m.handler()); err != nil {
			return err
		}
		if err := inf.SetWatchErrorHandlerWithContext(m.watchError); err != nil {
			return err
		}
		m.synced = append(m.synced, inf.HasSynced)
	}
	f.Start(ctx.Done())
	return nil
}

// watchError reports a failure of one of the member's informers. While the member is known
// not to answer (its subsets' status says so, and the UnitedDeployments are told), each retry
// is logged at -v=2 only: an outage is a state the agent reports, not an error of its own.
// Otherwise it is reported as client-go does, redacted like every message from a member.
func (m *Member) watchError(ctx context.Context, r *cache.Reflector, err error) {
	if ok, why := m.health.get(); !ok {
		klog.FromContext(ctx).V(2).Info("Member cluster not answering; its informer retries", "cluster", m.Profile, "reason", why, "err", Redact(err.Error()))
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, RedactError(err))
}

// Event is what happened to a member's subset workload.
type Event int

const (
	Added Event = iota
	Updated
	Deleted
)

// handler passes every event of a subset workload on as its namespace and UnitedDeployment.
func (m *Member) handler() cache.ResourceEventHandler {
	each := func(obj any, e Event) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if o, ok := obj.(metav1.Object); ok {
			if name := o.GetLabels()[appsv1alpha1.LabelUnitedDeploymentName]; name != "" {
				m.notify(o.GetNamespace(), name, e)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { each(obj, Added) },
		UpdateFunc: func(_, cur any) { each(cur, Updated) },
		DeleteFunc: func(obj any) { each(obj, Deleted) },
	}
}

// HasSynced reports whether the member's caches have listed once. A member stopped (back from
// an outage, its access changed) never has: a sync that got it before it was dropped waits, and
// the next one builds it anew.
func (m *Member) HasSynced() bool {
	m.mu.Lock()
	tapps, ctx := m.tappSync, m.ctx
	m.mu.Unlock()
	if ctx != nil && ctx.Err() != nil {
		return false
	}
	for _, s := range m.synced {
		if !s() {
			return false
		}
	}
	return tapps == nil || tapps()
}

// TApps returns the member's TApp lister, after checking (discovery) that the member serves
// tapps.apps.workload.dev: a TApp subset needs the workload CRDs, and an agent running the TApp
// controller, in its member. A yes starts the informer for good; a no is kept for TAppRecheck
// (a discovery that failed is not an answer and is not kept). The error names the cluster.
func (m *Member) TApps() (listers.TAppLister, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tapps != nil {
		return m.tapps, nil
	}
	if m.refused != nil && m.now().Sub(m.refusedAt) < TAppRecheck {
		return nil, m.refused
	}
	m.refused = nil
	gv := appsv1alpha1.SchemeGroupVersion.String()
	list, err := m.Kube.Discovery().ServerResourcesForGroupVersion(gv)
	served := false
	if err == nil {
		for _, r := range list.APIResources {
			served = served || r.Name == "tapps"
		}
	}
	if !served {
		why := "it does not serve tapps." + appsv1alpha1.SchemeGroupVersion.Group
		if err != nil && !apierrors.IsNotFound(err) {
			why = "discovery of " + gv + " failed: " + Redact(err.Error())
		}
		refused := fmt.Errorf("cluster %s cannot run a TApp subset: %s; install the workload CRDs and agent there, or use a StatefulSet or Deployment template", m.Profile, why)
		if err == nil || apierrors.IsNotFound(err) {
			m.refused, m.refusedAt = refused, m.now()
		}
		return nil, refused
	}
	f := externalversions.NewSharedInformerFactoryWithOptions(m.Workloads, m.opts.Resync,
		externalversions.WithNamespace(m.opts.Namespace),
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = MemberSelector }),
		externalversions.WithTransform(m.opts.Transform))
	inf := f.Apps().V1alpha1().TApps()
	if _, err := inf.Informer().AddEventHandler(m.handler()); err != nil {
		return nil, err
	}
	if err := inf.Informer().SetWatchErrorHandlerWithContext(m.watchError); err != nil {
		return nil, err
	}
	m.tapps, m.tappSync = inf.Lister(), inf.Informer().HasSynced
	f.Start(m.ctx.Done())
	return m.tapps, nil
}

// forgetRefusal drops the member's last answer that it serves no TApps: its ClusterProfile
// changed, the cluster manager may have changed the cluster too.
func (m *Member) forgetRefusal() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused = nil
}

// Reachable reports whether the member answered the agent's last request, and why not. When it
// did not, the member is asked again (its version, one small GET) first: a member seen failing
// once would otherwise stay unreachable until its informers' next request, since nothing is
// written to an unreachable member.
func (m *Member) Reachable() (bool, string) {
	if ok, _ := m.health.get(); !ok {
		_, _ = m.Kube.Discovery().ServerVersion()
	}
	return m.health.get()
}

func (m *Member) stop() { m.cancel() }
