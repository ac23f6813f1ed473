package base

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestEnqueueAcceptsObjectsAndTombstones(t *testing.T) {
	b := New("base-test", "TApp", record.NewFakeRecorder(1))
	defer b.Queue.ShutDown()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	b.Enqueue(pod)
	b.Enqueue(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}})
	b.Enqueue("not an object")
	var got []Key
	for b.Queue.Len() > 0 {
		k, _ := b.Queue.Get()
		got = append(got, k)
		b.Queue.Done(k)
	}
	want := []Key{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("queued %v, want %v", got, want)
	}
}

func TestIsOursMatchesKindAndGroupVersion(t *testing.T) {
	b := New("base-test", "Canary", nil)
	defer b.Queue.ShutDown()
	for _, tc := range []struct {
		ref  *metav1.OwnerReference
		want bool
	}{
		{nil, false},
		{&metav1.OwnerReference{Kind: "Canary", APIVersion: v1alpha1.SchemeGroupVersion.String()}, true},
		{&metav1.OwnerReference{Kind: "Canary", APIVersion: "apps.example.com/v1"}, false},
		{&metav1.OwnerReference{Kind: "TApp", APIVersion: v1alpha1.SchemeGroupVersion.String()}, false},
	} {
		if got := b.IsOurs(tc.ref); got != tc.want {
			t.Errorf("IsOurs(%v) = %v, want %v", tc.ref, got, tc.want)
		}
	}
	if EventComponent("canary") != "canary-controller" {
		t.Errorf("EventComponent = %q", EventComponent("canary"))
	}
}

// Run waits for the watched informers, syncs what the handlers enqueue and returns when ctx ends.
func TestRunSyncsWatchedObjects(t *testing.T) {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	b := New("base-test-run", "TApp", nil)
	if err := b.Watch(factory.Core().V1().Pods().Informer(), b.ObjectHandler()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	var synced atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx, 1, func(_ context.Context, k Key) error {
			synced.Store(k)
			cancel()
			return nil
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if k, _ := synced.Load().(Key); k != (Key{Namespace: "ns", Name: "a"}) {
		t.Errorf("synced %v, want ns/a", k)
	}
}
