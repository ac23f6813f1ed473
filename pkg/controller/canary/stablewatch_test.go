package canary

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
)

// deploymentQueries records the field and label selectors of every list and watch of
// Deployments (the fake clientset ignores field selectors, so what is asked is what is tested).
type deploymentQueries struct {
	mu      sync.Mutex
	queries []string
}

func (q *deploymentQueries) reactor(a k8stesting.Action) (bool, runtime.Object, error) {
	var r k8stesting.ListRestrictions
	switch a := a.(type) {
	case k8stesting.ListAction:
		r = a.GetListRestrictions()
	case k8stesting.WatchAction:
		w := a.GetWatchRestrictions()
		r = k8stesting.ListRestrictions{Labels: w.Labels, Fields: w.Fields}
	default:
		return false, nil, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queries = append(q.queries, a.GetVerb()+" "+a.GetNamespace()+" fields="+r.Fields.String()+" labels="+r.Labels.String())
	return false, nil, nil
}

func (q *deploymentQueries) has(query string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Contains(q.queries, query)
}

func (q *deploymentQueries) all() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.queries)
}

// The agent's Canary controller watches the Deployments Canaries name by name, one watch per
// name however many Canaries share it, lists no other Deployment but the managed-by labelled
// ones, strips what the transform strips, and stops a watch when the last Canary naming it goes.
func TestWatchByName(t *testing.T) {
	other := newCanary(v1alpha1.PauseFirst)
	other.Name, other.UID = "checkout-2", "canary-2-uid"
	other.Spec.Canary.Name = "checkout-2-canary"
	stable := newStable(10)
	stable.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	unrelated := newStable(3)
	unrelated.Name, unrelated.UID = "unrelated", "unrelated-uid"
	kube := k8sfake.NewClientset(stable, unrelated)
	queries := &deploymentQueries{}
	kube.PrependReactor("list", "deployments", queries.reactor)
	kube.PrependWatchReactor("deployments", func(a k8stesting.Action) (bool, watch.Interface, error) {
		_, _, err := queries.reactor(a)
		return false, nil, err
	})
	client := fake.NewSimpleClientset(newCanary(v1alpha1.PauseFirst), other)
	managed := "app.kubernetes.io/managed-by=workload-agent"
	kubeInformers := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = managed }))
	canaryInformers := externalversions.NewSharedInformerFactory(client, 0)
	c, err := NewController(kube, client, canaryInformers.Apps().V1alpha1().Canaries(),
		kubeInformers.Apps().V1().Deployments(), record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	stripped := make(chan string, 10)
	c.WatchByName(func(obj interface{}) (interface{}, error) {
		if d, ok := obj.(*appsv1.Deployment); ok && d.ManagedFields != nil {
			d.ManagedFields = nil
			stripped <- d.Name
		}
		return obj, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kubeInformers.Start(ctx.Done())
	canaryInformers.Start(ctx.Done())
	done := make(chan struct{})
	go func() { c.Run(ctx, 2); close(done) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	}()

	byName := func(name string) string { return "fields=metadata.name=" + name + " labels=" }
	want := []string{
		"list shop " + byName("checkout"), "watch shop " + byName("checkout"),
		"list shop " + byName("checkout-canary"), "watch shop " + byName("checkout-canary"),
		"list shop " + byName("checkout-2-canary"), "watch shop " + byName("checkout-2-canary"),
		"list  fields= labels=" + managed, "watch  fields= labels=" + managed,
	}
	poll(t, "every named Deployment watched", func() bool {
		return !slices.ContainsFunc(want, func(q string) bool { return !queries.has(q) })
	})
	// Both Canaries sync and create their canary Deployments from what the watches show.
	poll(t, "both canary Deployments created", func() bool {
		for _, n := range []string{"checkout-canary", "checkout-2-canary"} {
			if _, err := kube.Tracker().Get(deploymentsGVR, ns, n); err != nil {
				return false
			}
		}
		return true
	})
	for _, q := range queries.all() {
		if !slices.Contains(want, q) {
			t.Errorf("Deployments listed or watched beyond the named and the managed ones: %q", q)
		}
	}
	if n := c.named.count(); n != 3 {
		t.Errorf("%d Deployments watched by name, want 3 (checkout shared by both Canaries)", n)
	}
	select {
	case name := <-stripped:
		if name != "checkout" {
			t.Errorf("transform saw %s", name)
		}
	case <-time.After(10 * time.Second):
		t.Error("the transform was not applied to the stable Deployment")
	}
	d, err := c.named.get(ns, "checkout")
	if err != nil || d.UID != "stable-uid" || d.ManagedFields != nil {
		t.Errorf("stable Deployment from its watch: %v, %v", d, err)
	}

	watchOf := func(name string) *namedWatch {
		c.named.mu.Lock()
		defer c.named.mu.Unlock()
		return c.named.watches[ns+"/"+name]
	}
	shared, own := watchOf("checkout"), watchOf("checkout-2-canary")
	c.forgetNames(ns + "/checkout-2")
	if n := c.named.count(); n != 2 || watchOf("checkout") != shared {
		t.Errorf("after the second Canary went: %d watches, checkout's kept: %v", n, watchOf("checkout") == shared)
	}
	poll(t, "the watch only the gone Canary needed stopped", own.informer.IsStopped)
	if shared.informer.IsStopped() {
		t.Error("the stable Deployment's watch stopped while a Canary still names it")
	}
	c.forgetNames(ns + "/checkout")
	if n := c.named.count(); n != 0 {
		t.Errorf("%d watches left after every Canary went", n)
	}
	poll(t, "the shared watch stopped", shared.informer.IsStopped)
	if _, err := c.named.get(ns, "checkout"); err != errNotWatched {
		t.Errorf("get of an unwatched Deployment: %v, want errNotWatched", err)
	}
}

// poll waits up to 10 s for cond, failing the test if it never holds.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// A Deployment whose watch has not listed reads as errNotWatched, which the worker retries as a
// lagging cache, never as "does not exist" (the plan would create a canary Deployment that exists
// or report a missing stable one).
func TestNamedDeploymentNotListedIsLagging(t *testing.T) {
	n := newNamedDeployments(k8sfake.NewClientset(), nil, cache.ResourceEventHandlerFuncs{}, nil)
	n.set(ns+"/checkout", []string{ns + "/checkout"}) // registered, not started
	if _, err := n.get(ns, "checkout"); err != errNotWatched || !cacheLagging(err) {
		t.Errorf("get before the watch listed: %v", err)
	}
	if d, err := n.get(ns, ""); d != nil || err == nil || cacheLagging(err) {
		t.Errorf("get of no name: %v, %v; want NotFound", d, err)
	}
}
