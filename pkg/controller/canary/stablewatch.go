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
	"k8s.io/apimachinery/pkg/fields"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// errNotWatched marks a read of a Deployment whose by-name watch has not listed yet: the sync is
// retried (as a lagging cache) and the watch's first list enqueues the Canary anyway.
var errNotWatched = fmt.Errorf("%w: the Deployment's watch has not listed yet", errStale)

// namedDeployments watches the Deployments Canaries name (spec.stableRef.name and
// spec.canary.name) one by one, each with a list/watch of fieldSelector metadata.name=<name>, so
// that the agent caches those Deployments and not every Deployment of the cluster: a stable
// Deployment carries none of the agent's labels. A watch is shared by the Canaries naming the same
// Deployment, started when the first of them is synced and stopped when the last one goes
// (docs/architecture.md, "What the agent caches").
type namedDeployments struct {
	client    kubernetes.Interface
	transform cache.TransformFunc
	handler   cache.ResourceEventHandler
	// listed is called with a Deployment's namespace/name once its watch has listed, so that
	// the Canaries waiting for it sync again even when the Deployment does not exist.
	listed func(key string)

	mu      sync.Mutex
	ctx     context.Context // nil until start
	watches map[string]*namedWatch
	refs    map[string][]string // Canary key -> the Deployment keys it names
}

type namedWatch struct {
	namespace, name string
	informer        cache.SharedIndexInformer
	cancel          context.CancelFunc // nil while not running
	refs            int
}

func newNamedDeployments(client kubernetes.Interface, transform cache.TransformFunc, handler cache.ResourceEventHandler, listed func(string)) *namedDeployments {
	return &namedDeployments{
		client: client, transform: transform, handler: handler, listed: listed,
		watches: map[string]*namedWatch{}, refs: map[string][]string{},
	}
}

// namedKeys are the namespace/name keys of the Deployments a Canary names, sorted.
func namedKeys(cn *v1alpha1.Canary) []string {
	keys, _ := indexByDeployment(cn)
	slices.Sort(keys)
	return keys
}

// start runs the watches registered so far and every later one until ctx is done.
func (n *namedDeployments) start(ctx context.Context) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ctx = ctx
	for _, w := range n.watches {
		n.run(w)
	}
}

// set makes the watches of the Deployments named by the Canary canaryKey those of keys (nil when
// the Canary is gone), starting and stopping watches as their reference counts go from and to 0.
func (n *namedDeployments) set(canaryKey string, keys []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.refs[canaryKey]
	if slices.Equal(old, keys) {
		return
	}
	for _, k := range keys {
		if slices.Contains(old, k) {
			continue
		}
		w := n.watches[k]
		if w == nil {
			w = n.newWatch(k)
			n.watches[k] = w
			n.run(w)
		}
		w.refs++
	}
	for _, k := range old {
		if w := n.watches[k]; w != nil && !slices.Contains(keys, k) {
			if w.refs--; w.refs == 0 {
				if w.cancel != nil {
					w.cancel()
				}
				delete(n.watches, k)
			}
		}
	}
	if len(keys) == 0 {
		delete(n.refs, canaryKey)
	} else {
		n.refs[canaryKey] = keys
	}
}

func (n *namedDeployments) newWatch(key string) *namedWatch {
	namespace, name, _ := cache.SplitMetaNamespaceKey(key)
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	inf := appsinformers.NewFilteredDeploymentInformer(n.client, namespace, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
	if n.transform != nil {
		utilruntime.Must(inf.SetTransform(n.transform))
	}
	if _, err := inf.AddEventHandler(n.handler); err != nil {
		utilruntime.HandleError(err) // only on a stopped informer, and this one has not run
	}
	return &namedWatch{namespace: namespace, name: name, informer: inf}
}

// run starts w when the watches run (under n.mu).
func (n *namedDeployments) run(w *namedWatch) {
	if n.ctx == nil || w.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(n.ctx)
	w.cancel = cancel
	go w.informer.RunWithContext(ctx)
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) && n.listed != nil {
			n.listed(w.namespace + "/" + w.name)
		}
	}()
}

// get returns the Deployment from its watch, a NotFound error when it does not exist, and
// errNotWatched while its watch has not listed (or no Canary names it).
func (n *namedDeployments) get(namespace, name string) (*appsv1.Deployment, error) {
	if name == "" {
		return nil, apierrors.NewNotFound(appsv1.Resource("deployments"), name)
	}
	n.mu.Lock()
	w := n.watches[namespace+"/"+name]
	n.mu.Unlock()
	if w == nil || !w.informer.HasSynced() {
		return nil, errNotWatched
	}
	obj, exists, err := w.informer.GetStore().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(appsv1.Resource("deployments"), name)
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, errors.New("unexpected object in the Deployment watch")
	}
	return d, nil
}

// count is the number of Deployments watched by name.
func (n *namedDeployments) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.watches)
}

// WatchByName makes the controller read the Deployments Canaries name from watches of those
// names alone, each object stored through transform; the Deployment informer given to
// NewController then only serves the canary Deployments the controller created (the agent gives
// it the managed-by informer), which finalize lists to orphan them. Call it before Run.
func (c *Controller) WatchByName(transform cache.TransformFunc) {
	c.named = newNamedDeployments(c.kubeClient, transform, c.deploymentHandler(), c.enqueueNaming)
}

// forgetNames stops the by-name watches only the gone Canary key needed.
func (c *Controller) forgetNames(key string) {
	if c.named != nil {
		c.named.set(key, nil)
	}
}
