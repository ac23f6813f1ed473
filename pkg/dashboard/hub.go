package dashboard

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// Resources the hub watches: our kinds, the native workloads a Canary releases, their pods (for
// the picture of pods per revision) and Events. One informer each, whatever the number of tabs.
var (
	podsResource   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	eventsResource = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	rsResource     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
)

func watched() []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, k := range workload.Kinds {
		out = append(out, k.Resource)
	}
	return append(out, rsResource, podsResource, eventsResource)
}

// Hub owns the watches: one informer per resource, in the dashboard's namespace (or all). Every
// change bumps a version and wakes the subscribers (the tabs' event streams), which rebuild
// their view from the caches. Errors of a watch (RBAC forbidden above all) are kept per resource
// until that resource's next event, and shown in every page.
type Hub struct {
	factory   dynamicinformer.DynamicSharedInformerFactory
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
	history   *History

	mu      sync.Mutex
	version uint64
	errs    map[schema.GroupVersionResource]string
	subs    map[chan struct{}]struct{}
}

// NewHub makes the informers of namespace ("" for every namespace); Start runs them.
func NewHub(client dynamic.Interface, namespace string) *Hub {
	h := &Hub{
		factory:   dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, namespace, nil),
		informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		history:   NewHistory(),
		errs:      map[schema.GroupVersionResource]string{},
		subs:      map[chan struct{}]struct{}{},
	}
	for _, gvr := range watched() {
		inf := h.factory.ForResource(gvr).Informer()
		_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { h.setErr(gvr, err) })
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { h.changed(gvr, obj) },
			UpdateFunc: func(_, obj interface{}) { h.changed(gvr, obj) },
			DeleteFunc: func(obj interface{}) { h.changed(gvr, nil) },
		})
		h.informers[gvr] = inf
	}
	return h
}

// Start runs the informers until ctx ends.
func (h *Hub) Start(ctx context.Context) { h.factory.Start(ctx.Done()) }

func (h *Hub) setErr(gvr schema.GroupVersionResource, err error) {
	h.mu.Lock()
	h.errs[gvr] = fmt.Sprintf("watching %s: %v", gvr.Resource, err)
	h.mu.Unlock()
	h.bump()
}

func (h *Hub) changed(gvr schema.GroupVersionResource, obj interface{}) {
	if u, ok := obj.(*unstructured.Unstructured); ok && gvr == workload.Canary.Resource {
		h.history.Record(u)
	}
	h.mu.Lock()
	delete(h.errs, gvr)
	h.mu.Unlock()
	h.bump()
}

func (h *Hub) bump() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.version++
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default: // already woken: it will read everything new anyway
		}
	}
}

// Subscribe returns a channel woken after every change, and the function that ends it.
func (h *Hub) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// Version counts the changes seen so far.
func (h *Hub) Version() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.version
}

// Errors are the watches' current errors, sorted.
func (h *Hub) Errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.errs))
	for _, e := range h.errs {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// List is every cached object of a resource, by namespace then name.
func (h *Hub) List(gvr schema.GroupVersionResource) []*unstructured.Unstructured {
	inf, ok := h.informers[gvr]
	if !ok {
		return nil
	}
	var out []*unstructured.Unstructured
	for _, o := range inf.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}

// Get is one cached object, or nil.
func (h *Hub) Get(gvr schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	inf, ok := h.informers[gvr]
	if !ok {
		return nil
	}
	o, found, err := inf.GetStore().GetByKey(cacheKey(namespace, name))
	if err != nil || !found {
		return nil
	}
	u, _ := o.(*unstructured.Unstructured)
	return u
}

func cacheKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
