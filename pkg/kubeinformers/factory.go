// Package kubeinformers builds shared informers of the kinds the agent watches (native ones and
// the Gateway API's HTTPRoutes), one resource at a time.
//
// client-go's informers.NewSharedInformerFactory reaches an informer of every resource of every
// API group (its ForResource alone is 80 kB of code) and takes the whole kubernetes.Interface, so
// using it links every typed client into the binary. Factory knows only the kinds the agent
// reads and lists them through kubeclient.Interface (docs/architecture.md, "A lean agent
// binary"). It behaves as the generated factory does: one informer per kind, shared by every
// caller; Start starts those requested so far; the transform is set before the informer starts.
// Its per-kind interfaces have the method sets of client-go's (informers/core/v1.PodInformer and
// so on), so a controller's unit test may hand in informers of the generated factory instead.
package kubeinformers

import (
	"context"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// Option configures a Factory.
type Option func(*Factory)

// WithNamespace scopes every informer to namespace ("" is all namespaces).
func WithNamespace(namespace string) Option {
	return func(f *Factory) { f.namespace = namespace }
}

// WithTweakListOptions changes the list and watch options of every kind.
func WithTweakListOptions(tweak func(*metav1.ListOptions)) Option {
	return func(f *Factory) { f.tweak = tweak }
}

// WithTweakListOptionsFor changes the list and watch options of obj's kind instead of the
// factory-wide tweak.
func WithTweakListOptionsFor(obj runtime.Object, tweak func(*metav1.ListOptions)) Option {
	return func(f *Factory) { f.kindTweaks[reflect.TypeOf(obj)] = tweak }
}

// WithTransform sets the transform of every informer.
func WithTransform(t cache.TransformFunc) Option {
	return func(f *Factory) { f.transform = t }
}

// Factory hands out one shared informer per kind.
type Factory struct {
	client     kubeclient.Interface
	namespace  string
	resync     time.Duration
	tweak      func(*metav1.ListOptions)
	kindTweaks map[reflect.Type]func(*metav1.ListOptions)
	transform  cache.TransformFunc

	lock         sync.Mutex
	informers    map[reflect.Type]cache.SharedIndexInformer
	started      map[reflect.Type]bool
	wg           sync.WaitGroup
	shuttingDown bool
}

// New returns a factory of informers listing through client with the default resync period.
func New(client kubeclient.Interface, resync time.Duration, opts ...Option) *Factory {
	f := &Factory{
		client:     client,
		resync:     resync,
		kindTweaks: map[reflect.Type]func(*metav1.ListOptions){},
		informers:  map[reflect.Type]cache.SharedIndexInformer{},
		started:    map[reflect.Type]bool{},
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// lister is a kind's typed List and Watch in a namespace.
type lister[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// informerFor returns obj's kind's shared informer, built on the first call from the kind's
// namespaced client; api is the client the kind's group is reached through (it tells whether
// watch-list requests are supported, as the generated informers ask of theirs).
func informerFor[L runtime.Object](f *Factory, obj runtime.Object, api any, client func(namespace string) lister[L]) cache.SharedIndexInformer {
	f.lock.Lock()
	defer f.lock.Unlock()
	typ := reflect.TypeOf(obj)
	if inf, ok := f.informers[typ]; ok {
		return inf
	}
	tweak, ok := f.kindTweaks[typ]
	if !ok {
		tweak = f.tweak
	}
	options := func(o metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	c := client(f.namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, options(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, options(o))
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, api), obj,
		cache.SharedIndexInformerOptions{
			ResyncPeriod: f.resync,
			Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		})
	if f.transform != nil {
		_ = inf.SetTransform(f.transform) // fails only once started; it has not been
	}
	f.informers[typ] = inf
	return inf
}

// Start starts every informer requested so far. Informers requested later need another Start.
func (f *Factory) Start(stop <-chan struct{}) {
	ctx := wait.ContextForChannel(stop)
	f.lock.Lock()
	defer f.lock.Unlock()
	if f.shuttingDown {
		return
	}
	for typ, inf := range f.informers {
		if !f.started[typ] {
			f.wg.Go(func() { inf.RunWithContext(ctx) })
			f.started[typ] = true
		}
	}
}

// WaitForCacheSync waits until every started informer has synced or stop is closed, and returns
// whether each did. It waits on the informers' sync signals, without polling.
func (f *Factory) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	f.lock.Lock()
	started := map[reflect.Type]cache.SharedIndexInformer{}
	for typ, inf := range f.informers {
		if f.started[typ] {
			started[typ] = inf
		}
	}
	f.lock.Unlock()
	checkers := make([]cache.DoneChecker, 0, len(started))
	for _, inf := range started {
		checkers = append(checkers, inf.HasSyncedChecker())
	}
	cache.WaitFor(wait.ContextForChannel(stop), "" /* no logging */, checkers...)
	synced := make(map[reflect.Type]bool, len(started))
	for typ, inf := range started {
		synced[typ] = inf.HasSynced()
	}
	return synced
}

// Shutdown waits for the started informers' goroutines; the stop channel given to Start must be
// closed first. Start does nothing afterwards.
func (f *Factory) Shutdown() {
	f.lock.Lock()
	f.shuttingDown = true
	f.lock.Unlock()
	f.wg.Wait()
}
