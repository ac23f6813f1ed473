package canary

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// The named watches list and watch each Deployment a Canary names with a field selector on its
// name, only while a Canary names it, and serve it next to the managed-by Deployments.
func TestWatchedDeploymentsWatchOnlyNamedDeployments(t *testing.T) {
	stable := newStable(10)
	other := newStable(3)
	other.Name, other.UID = "unrelated", "unrelated-uid"
	kube := k8sfake.NewClientset(stable, other)
	// The fake API server ignores field selectors: answer as the real one does.
	kube.PrependReactor("list", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name, ok := a.(k8stesting.ListAction).GetListRestrictions().Fields.RequiresExactMatch("metadata.name")
		if !ok {
			t.Errorf("list of Deployments without a field selector on the name: %v", a)
			return false, nil, nil
		}
		list := &appsv1.DeploymentList{}
		for _, d := range []*appsv1.Deployment{stable, other} {
			if d.Name == name {
				list.Items = append(list.Items, *d.DeepCopy())
			}
		}
		return true, list, nil
	})
	managed := kubeinformers.NewSharedInformerFactory(k8sfake.NewClientset(), 0).Apps().V1().Deployments()
	w := newWatchedDeployments(kube, managed.Lister())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go w.run(ctx)

	key := cache.ObjectName{Namespace: ns, Name: "checkout"}
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return w.reference(key, "checkout", "checkout-canary"), nil
	})
	if err != nil {
		t.Fatalf("the named watches never listed: %v", err)
	}
	if d, err := w.Lister().Deployments(ns).Get("checkout"); err != nil || d.UID != stable.UID {
		t.Fatalf("Get(checkout) = %v, %v", d, err)
	}
	if _, err := w.Lister().Deployments(ns).Get("unrelated"); err == nil {
		t.Error("an unrelated Deployment is served: it was listed")
	}
	if _, err := w.Lister().Deployments(ns).Get("checkout-canary"); err == nil {
		t.Error("a Deployment that does not exist is served")
	}
	listed := map[string]bool{}
	for _, a := range kube.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok {
			name, _ := l.GetListRestrictions().Fields.RequiresExactMatch("metadata.name")
			listed[name] = true
		}
	}
	if !listed["checkout"] || !listed["checkout-canary"] || listed["unrelated"] {
		t.Errorf("names listed %v, want checkout and checkout-canary only", listed)
	}

	w.release(key)
	if _, err := w.Lister().Deployments(ns).Get("checkout"); err == nil {
		t.Error("a Deployment no Canary names any more is still served")
	}
	w.mu.Lock()
	left := len(w.watches)
	w.mu.Unlock()
	if left != 0 {
		t.Errorf("%d watches left after the last Canary released its names", left)
	}
}
