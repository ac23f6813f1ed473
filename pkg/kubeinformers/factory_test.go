package kubeinformers

import (
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"
)

func obj(ns, name, label string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"k": label},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}
}

// TestFactory checks what the agent relies on: one informer per kind, the namespace and the
// list options (a kind's own tweak over the factory's) in every list and watch, the transform
// applied to what is cached, and Start/WaitForCacheSync/Shutdown.
func TestFactory(t *testing.T) {
	kube := fake.NewClientset(
		&corev1.Pod{ObjectMeta: obj("a", "p", "pod")},
		&corev1.Pod{ObjectMeta: obj("b", "q", "pod")},
		&appsv1.Deployment{ObjectMeta: obj("a", "d", "all")},
	)
	f := New(kube, 0,
		WithNamespace("a"),
		WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "k=all" }),
		WithTweakListOptionsFor(&corev1.Pod{}, func(o *metav1.ListOptions) { o.LabelSelector = "k=pod" }),
		WithTransform(func(o interface{}) (interface{}, error) {
			o.(metav1.Object).SetManagedFields(nil)
			return o, nil
		}))
	if f.Pods().Informer() != f.Pods().Informer() {
		t.Fatal("two pod informers: want one shared")
	}
	pods, deps := f.Pods().Lister(), f.Deployments().Lister()
	stop := make(chan struct{})
	f.Start(stop)
	synced := f.WaitForCacheSync(stop)
	if len(synced) != 2 {
		t.Errorf("synced %d informers, want 2 (pods, deployments): %v", len(synced), synced)
	}
	for typ, ok := range synced {
		if !ok {
			t.Errorf("%v did not sync", typ)
		}
	}

	want := map[string]string{"pods": "k=pod", "deployments": "k=all"}
	for _, a := range kube.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			continue
		}
		r := a.GetResource().Resource
		if a.GetNamespace() != "a" {
			t.Errorf("%s %s in namespace %q, want a", a.GetVerb(), r, a.GetNamespace())
		}
		var sel string
		switch a := a.(type) {
		case k8stesting.ListAction:
			sel = a.GetListRestrictions().Labels.String()
		case k8stesting.WatchAction:
			sel = a.GetWatchRestrictions().Labels.String()
		}
		if sel != want[r] {
			t.Errorf("%s %s with selector %q, want %q", a.GetVerb(), r, sel, want[r])
		}
	}
	got, _ := pods.List(labels.Everything())
	if len(got) != 1 || got[0].Name != "p" || got[0].ManagedFields != nil {
		t.Errorf("pod cache: %v, want p alone and without managedFields", got)
	}
	d, err := deps.Deployments("a").Get("d")
	if err != nil || d.ManagedFields != nil {
		t.Errorf("deployment d: %v, %v; want it without managedFields", d, err)
	}
	close(stop)
	f.Shutdown()
	f.ControllerRevisions().Informer()
	f.Start(make(chan struct{}))
	if len(f.started) != 2 {
		t.Errorf("Start after Shutdown started informers: %v", f.started)
	}
}

// TestWaitForCacheSyncReportsUnsynced: an informer whose list keeps failing is reported as not
// synced once stop is closed, and one that listed as synced.
func TestWaitForCacheSyncReportsUnsynced(t *testing.T) {
	kube := fake.NewClientset()
	kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("no pods today")
	})
	f := New(kube, 0)
	f.Pods().Informer()
	f.StatefulSets().Informer()
	stop := make(chan struct{})
	f.Start(stop)
	if !cache.WaitForCacheSync(stop, f.StatefulSets().Informer().HasSynced) {
		t.Fatal("statefulsets did not sync")
	}
	close(stop)
	synced := f.WaitForCacheSync(stop)
	f.Shutdown()
	if synced[reflect.TypeOf(&corev1.Pod{})] || !synced[reflect.TypeOf(&appsv1.StatefulSet{})] {
		t.Errorf("synced %v, want pods false and statefulsets true", synced)
	}
}

// TestHTTPRoutes: the HTTPRoute informer lists through the Gateway API v1 client it is given,
// in the factory's namespace, with its transform.
func TestHTTPRoutes(t *testing.T) {
	gw := gatewayfake.NewClientset(
		&gatewayv1.HTTPRoute{ObjectMeta: obj("a", "r", "x")},
		&gatewayv1.HTTPRoute{ObjectMeta: obj("b", "s", "x")},
	)
	f := New(nil, 0, WithNamespace("a"), WithTransform(func(o interface{}) (interface{}, error) {
		o.(metav1.Object).SetManagedFields(nil)
		return o, nil
	}))
	routes := f.HTTPRoutes(fakeV1{gw.GatewayV1()}).Lister()
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)
	for typ, ok := range f.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	got, _ := routes.List(labels.Everything())
	if len(got) != 1 || got[0].Name != "r" || got[0].ManagedFields != nil {
		t.Errorf("route cache: %v, want r alone and without managedFields", got)
	}
	for _, a := range gw.Actions() {
		if a.GetNamespace() != "a" {
			t.Errorf("%s %s in namespace %q, want a", a.GetVerb(), a.GetResource().Resource, a.GetNamespace())
		}
	}
}

// fakeV1 is the fake's v1 client, telling the reflector (as the fake clientset does) that it
// serves no watch-list requests: a reflector that asked for one would never sync.
type fakeV1 struct {
	gatewayclient.GatewayV1Interface
}

func (fakeV1) IsWatchListSemanticsUnSupported() bool { return true }
