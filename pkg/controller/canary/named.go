package canary

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// deploymentSource is where the controller reads Deployments from: the ones it created (canary
// Deployments, labelled managed-by) and the ones Canaries name (stableRef.name, and
// canary.name, which someone else may have taken). Reference and Release say which names each
// Canary needs, so that a source can watch just those.
type deploymentSource interface {
	// Lister serves every Deployment the source holds.
	Lister() appslisters.DeploymentLister
	// reference records the Deployment names a Canary needs; it reports whether they are all
	// in the source (false: a watch just started and has not listed yet).
	reference(canary cache.ObjectName, names ...string) bool
	// release forgets a Canary's names.
	release(canary cache.ObjectName)
}

// listerDeployments serves a lister that holds every Deployment a Canary may name (an
// unfiltered informer, or a test's store).
type listerDeployments struct{ lister appslisters.DeploymentLister }

func (d listerDeployments) Lister() appslisters.DeploymentLister     { return d.lister }
func (listerDeployments) reference(cache.ObjectName, ...string) bool { return true }
func (listerDeployments) release(cache.ObjectName)                   {}

// watchedDeployments is the agent's Deployments source: its own canary Deployments from an
// informer filtered by the managed-by label, and each Deployment a Canary names through a watch
// of that one name (fieldSelector metadata.name=<name>), started when the first Canary names it
// and stopped when the last one stops naming it. So the agent caches no Deployment that no
// Canary names, however many the cluster holds (docs/architecture.md, "What the agent caches").
type watchedDeployments struct {
	managed appslisters.DeploymentLister
	*namedWatches
}

// newWatchedDeployments returns the source over the managed-by Deployment informer's lister;
// the controller gives it its event handler (setHandler) and its run context (Run).
func newWatchedDeployments(kube kubeclient.Interface, managed appslisters.DeploymentLister) *watchedDeployments {
	return &watchedDeployments{managed: managed, namedWatches: newNamedWatches(kube, &appsv1.Deployment{},
		func(namespace string) listWatchFuncs {
			d := kube.AppsV1().Deployments(namespace)
			return listWatchFuncs{
				list:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return d.List(ctx, o) },
				watch: d.Watch,
			}
		})}
}

// Lister serves the managed-by Deployments and the named ones.
func (w *watchedDeployments) Lister() appslisters.DeploymentLister { return watchedLister{w} }

// named returns the Deployment of a named watch, nil when there is none.
func (w *watchedDeployments) named(namespace, name string) (*appsv1.Deployment, bool) {
	obj, ok := w.get(namespace, name)
	if !ok {
		return nil, false
	}
	return obj.(*appsv1.Deployment), true
}

// listWatchFuncs list and watch one kind in one namespace.
type listWatchFuncs struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// namedWatches runs one informer per object name that some Canary references, shared by the
// Canaries that name it and stopped when the last one stops naming it: the way the agent reads
// objects it does not own without caching every object of their kind.
type namedWatches struct {
	kube      kubeclient.Interface
	example   runtime.Object
	client    func(namespace string) listWatchFuncs
	transform cache.TransformFunc
	handler   cache.ResourceEventHandler

	mu      sync.Mutex
	ctx     context.Context // the controller's run; nil until it runs
	watches map[cache.ObjectName]*namedWatch
	refs    map[cache.ObjectName][]cache.ObjectName // by Canary
}

// namedWatch is the informer of one name and the Canaries that name it.
type namedWatch struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	users    int
}

func newNamedWatches(kube kubeclient.Interface, example runtime.Object, client func(string) listWatchFuncs) *namedWatches {
	return &namedWatches{kube: kube, example: example, client: client, transform: stripManagedFields,
		watches: map[cache.ObjectName]*namedWatch{}, refs: map[cache.ObjectName][]cache.ObjectName{}}
}

// setHandler sets the handler of every named watch's events.
func (w *namedWatches) setHandler(h cache.ResourceEventHandler) { w.handler = h }

// run lets named watches start (those referenced already start now) and stops them all when
// ctx ends.
func (w *namedWatches) run(ctx context.Context) {
	w.mu.Lock()
	w.ctx = ctx
	for key, nw := range w.watches {
		if nw.informer == nil {
			w.start(key, nw)
		}
	}
	w.mu.Unlock()
	<-ctx.Done()
}

// reference records the names a Canary needs (starting their watches) in place of those it
// named before; it reports whether they are all listed.
func (w *namedWatches) reference(canary cache.ObjectName, names ...string) bool {
	want := make([]cache.ObjectName, 0, len(names))
	for _, n := range names {
		if n != "" {
			want = append(want, cache.ObjectName{Namespace: canary.Namespace, Name: n})
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.refs[canary]
	for _, key := range want {
		if nw := w.watches[key]; nw == nil {
			nw = &namedWatch{}
			w.watches[key] = nw
			w.start(key, nw)
		}
		w.watches[key].users++
	}
	w.drop(old)
	w.refs[canary] = want
	for _, key := range want {
		if nw := w.watches[key]; nw.informer == nil || !nw.informer.HasSynced() {
			return false
		}
	}
	return true
}

// Release forgets a Canary's names.
func (w *namedWatches) release(canary cache.ObjectName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(w.refs[canary])
	delete(w.refs, canary)
}

// drop takes one user off each watch, stopping those left without any. Callers hold mu.
func (w *namedWatches) drop(keys []cache.ObjectName) {
	for _, key := range keys {
		nw := w.watches[key]
		if nw == nil {
			continue
		}
		if nw.users--; nw.users <= 0 {
			if nw.cancel != nil {
				nw.cancel()
			}
			delete(w.watches, key)
		}
	}
}

// start runs the informer of one name, once the controller runs. Callers hold mu.
func (w *namedWatches) start(key cache.ObjectName, nw *namedWatch) {
	if w.ctx == nil {
		return
	}
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, key.Name).String()
	c := w.client(key.Namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return c.list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return c.watch(ctx, o)
		},
	}
	// As the generated informers do: a client that cannot stream lists (a fake) is listed.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, w.kube), w.example.DeepCopyObject(), 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if w.transform != nil {
		_ = inf.SetTransform(w.transform)
	}
	if w.handler != nil {
		_, _ = inf.AddEventHandler(w.handler)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	nw.informer, nw.cancel = inf, cancel
	go inf.RunWithContext(ctx)
}

// get returns the object of a named watch.
func (w *namedWatches) get(namespace, name string) (any, bool) {
	w.mu.Lock()
	nw := w.watches[cache.ObjectName{Namespace: namespace, Name: name}]
	w.mu.Unlock()
	if nw == nil || nw.informer == nil {
		return nil, false
	}
	obj, ok, err := nw.informer.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj, true
}

// watchedLister is the lister of watchedDeployments.
type watchedLister struct{ w *watchedDeployments }

func (l watchedLister) List(sel labels.Selector) ([]*appsv1.Deployment, error) {
	return l.w.managed.List(sel)
}

func (l watchedLister) Deployments(namespace string) appslisters.DeploymentNamespaceLister {
	return watchedNamespaceLister{l.w, namespace}
}

type watchedNamespaceLister struct {
	w         *watchedDeployments
	namespace string
}

// List lists the managed-by Deployments and the named ones of the namespace.
func (l watchedNamespaceLister) List(sel labels.Selector) ([]*appsv1.Deployment, error) {
	out, err := l.w.managed.Deployments(l.namespace).List(sel)
	if err != nil {
		return nil, err
	}
	l.w.mu.Lock()
	var keys []cache.ObjectName
	for key := range l.w.watches {
		if key.Namespace == l.namespace {
			keys = append(keys, key)
		}
	}
	l.w.mu.Unlock()
	for _, key := range keys {
		if d, ok := l.w.named(key.Namespace, key.Name); ok && sel.Matches(labels.Set(d.Labels)) && !contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// Get returns a managed-by Deployment, or else a named one.
func (l watchedNamespaceLister) Get(name string) (*appsv1.Deployment, error) {
	d, err := l.w.managed.Deployments(l.namespace).Get(name)
	if err == nil || !apierrors.IsNotFound(err) {
		return d, err
	}
	if d, ok := l.w.named(l.namespace, name); ok {
		return d, nil
	}
	return nil, err
}

func contains(ds []*appsv1.Deployment, d *appsv1.Deployment) bool {
	for _, x := range ds {
		if x.UID == d.UID {
			return true
		}
	}
	return false
}

// stripManagedFields is the named watches' transform, as the agent's factories have: the
// controller never reads metadata.managedFields.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
