package analysis

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

func pod(name string, app string, ready bool, restarts ...int32) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": app}}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	for i, r := range restarts {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: string(rune('a' + i)), RestartCount: r})
	}
	return p
}

func TestPodHealthMeasure(t *testing.T) {
	gone := pod("gone", "canary", false, 50)
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{
		pod("c1", "canary", true, 0, 1),
		pod("c2", "canary", false, 3, 1),
		pod("c3", "canary", true),
		gone,
		pod("s1", "stable", false, 9),
	} {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	other := pod("c9", "canary", false, 9)
	other.Namespace = "other"
	_ = indexer.Add(other)

	selector := labels.SelectorFromSet(labels.Set{"app": "canary"})
	var objs []runtime.Object
	for _, o := range indexer.List() {
		objs = append(objs, o.(*corev1.Pod))
	}
	kube := kubefake.NewClientset(objs...)
	for name, p := range map[string]PodHealth{
		"lister": {Pods: corelisters.NewPodLister(indexer).Pods("ns"), Selector: selector},
		// The agent's: no canary pod in its cache, a list from the API server's watch cache.
		"API server": {Client: kube, Namespace: "ns", Selector: selector},
	} {
		got, err := p.Measure(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{"pods": 3, "ready": 2, "notReady": 1, "restarts": 4, "totalRestarts": 5}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v (terminating pods, other namespaces and other labels left out)", name, got, want)
		}
	}
	var lists []string
	for _, a := range kube.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok {
			lists = append(lists, l.GetNamespace()+" "+l.GetListRestrictions().Labels.String())
		}
	}
	if !reflect.DeepEqual(lists, []string{"ns app=canary"}) {
		t.Errorf("API server lists %q, want one of the canary's pods in its namespace", lists)
	}
}
