package canary

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// Two Canaries naming the same stable Deployment share one watch of it: its watch requests carry
// the name's field selector and no other, it outlives the first Canary's release and stops with
// the last one's, and the Deployment it caches has no managedFields.
func TestWatchedDeploymentsShareAndStop(t *testing.T) {
	stable := newStable(10)
	stable.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	kube := k8sfake.NewClientset(stable)
	var mu sync.Mutex
	var watched []string
	kube.PrependWatchReactor("deployments", func(a k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		r := a.(k8stesting.WatchAction).GetWatchRestrictions()
		watched = append(watched, "fields="+r.Fields.String()+" labels="+r.Labels.String())
		return false, nil, nil
	})
	kube.PrependReactor("list", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if r := a.(k8stesting.ListAction).GetListRestrictions(); !r.Labels.Empty() || r.Fields.Empty() {
			t.Errorf("Deployments listed with labels %q, fields %q; want one name", r.Labels, r.Fields)
		}
		return false, nil, nil
	})
	managed := kubeinformers.NewSharedInformerFactory(k8sfake.NewClientset(), 0).Apps().V1().Deployments()
	w := newWatchedDeployments(kube, managed.Lister())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go w.run(ctx)

	first, second := cache.ObjectName{Namespace: ns, Name: "checkout"}, cache.ObjectName{Namespace: ns, Name: "checkout-2"}
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return w.reference(first, "checkout", "checkout-canary") && w.reference(second, "checkout", "checkout-2-canary"), nil
	})
	if err != nil {
		t.Fatalf("the named watches never listed: %v", err)
	}
	watchOf := func(name string) *namedWatch {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.watches[cache.ObjectName{Namespace: ns, Name: name}]
	}
	shared := watchOf("checkout")
	if n := len(w.watches); n != 3 || shared == nil || shared.users != 2 {
		t.Fatalf("%d watches, checkout's %+v; want 3, checkout's shared by 2 Canaries", n, shared)
	}
	err = wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(watched) >= 3, nil
	})
	if err != nil {
		t.Fatalf("watches requested: %v", watched)
	}
	mu.Lock()
	for _, q := range watched {
		byName := func(n string) string { return "fields=metadata.name=" + n + " labels=" }
		if !slices.Contains([]string{byName("checkout"), byName("checkout-canary"), byName("checkout-2-canary")}, q) {
			t.Errorf("watch request %q, want one named Deployment and no labels", q)
		}
	}
	mu.Unlock()
	if d, err := w.Lister().Deployments(ns).Get("checkout"); err != nil || d.ManagedFields != nil {
		t.Errorf("cached stable Deployment: %v, %v; want it without managedFields", d, err)
	}

	own := watchOf("checkout-2-canary")
	w.release(second)
	if watchOf("checkout") != shared || shared.informer.IsStopped() {
		t.Error("the shared watch went with the first Canary that released it")
	}
	poll := func(what string, inf cache.SharedIndexInformer) {
		t.Helper()
		if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
			return inf.IsStopped(), nil
		}); err != nil {
			t.Fatalf("%s did not stop: %v", what, err)
		}
	}
	poll("the watch only the released Canary needed", own.informer)
	w.release(first)
	poll("the shared watch, once no Canary names it", shared.informer)
	if watchOf("checkout") != nil {
		t.Error("a released name is still watched")
	}
}
