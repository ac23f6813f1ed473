package invariant

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	k8sfake "k8s.io/client-go/kubernetes/fake"
)

func readyPod(name string) *corev1.Pod {
	p := webPod(name, corev1.PodRunning)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

// The moving watcher follows its total in two moves: an expected total only loosens the
// bounds (a ready pod above the old total may go before the workload acts on the raise), a
// followed one holds the workload to it (once ready, a pod of the raised total may not be
// lost; pods of a lowered total may go, but none may be added above it + maxSurge).
func TestMovingFollowsTheTotal(t *testing.T) {
	kube := k8sfake.NewClientset(readyPod("a"), readyPod("b"), readyPod("surplus"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := ReleaseFollowing(ctx, kube, "shop", "app=web", 2, 2, 0)
	var mu sync.Mutex
	var seen []string
	m.OnViolation(func(v string) { mu.Lock(); defer mu.Unlock(); seen = append(seen, v) })
	pods := kube.CoreV1().Pods("shop")
	step := func(what string, events int, change func() error, wantViolations int) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return m.Events() >= events, nil
		}); err != nil {
			t.Fatalf("%s: the watcher saw %d events, want %d", what, m.Events(), events)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != wantViolations {
			t.Fatalf("%s: violations %q, want %d", what, seen, wantViolations)
		}
	}
	create := func(p *corev1.Pod) func() error {
		return func() error { _, err := pods.Create(ctx, p, metav1.CreateOptions{}); return err }
	}
	remove := func(name string) func() error {
		return func() error { return pods.Delete(ctx, name, metav1.DeleteOptions{}) }
	}

	m.Expect(4)                                                          // ceiling 6; the floor stays 2
	step("a surplus pod of the old total goes", 4, remove("surplus"), 0) // 2 ready: the old total's floor
	m.Follow(4)                                                          // the floor now rises with ready pods up to 4
	step("a pending pod of the raised total", 5, create(webPod("c", corev1.PodPending)), 0)
	step("a ready pod of the raised total", 6, create(readyPod("d")), 0) // floor 3
	step("a ready pod lost after the rise", 7, remove("a"), 1)           // 2 ready < floor 3
	m.Expect(1)                                                          // floor 1
	m.Follow(1)                                                          // the ceiling comes down as pods go
	step("a pod of the old total goes", 8, remove("b"), 1)               // 2 pods: ceiling max(1 + 2, 2) = 3
	step("a pod within the lowered total + maxSurge", 9, create(webPod("e", corev1.PodPending)), 1)
	step("a pod above it", 10, create(webPod("f", corev1.PodPending)), 2) // 4 pods > 3
	if m.Count() != 2 {
		t.Errorf("count %d, want 2", m.Count())
	}
}
