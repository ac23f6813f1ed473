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

// The moving watcher follows its total: a raised total is not a violation until its pods are
// ready, and then losing one is; a lowered total lowers the floor at once, and its ceiling
// comes down as pods go, so that adding one above the new total + maxSurge is a violation.
func TestMovingFollowsTheTotal(t *testing.T) {
	kube := k8sfake.NewClientset(readyPod("a"), readyPod("b"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := ReleaseFollowing(ctx, kube, "shop", "app=web", 2, 1, 0)
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

	m.SetTotal(4) // ceiling 5, floor still 2
	step("a pending pod of the raised total", 3, create(webPod("c", corev1.PodPending)), 0)
	step("a ready pod of the raised total", 4, create(readyPod("d")), 0) // floor 3
	step("a ready pod lost after the rise", 5, remove("a"), 1)           // 2 ready < floor 3
	m.SetTotal(1)                                                        // floor 1; the ceiling stays 5 until pods go
	step("a pod of the old total goes", 6, remove("b"), 1)               // 2 pods: the ceiling comes down to 2
	step("a pod above the lowered total + maxSurge", 7, create(webPod("e", corev1.PodPending)), 2)
	if m.Count() != 2 {
		t.Errorf("count %d, want 2", m.Count())
	}
}
