package invariant

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	k8sfake "k8s.io/client-go/kubernetes/fake"
)

func webPod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// The surge watcher counts every pod that exists, terminating ones included, finished ones
// not, and reports a violation at the moment the count goes above the limit.
func TestSurgeReportsTheMomentPodsExceedTheLimit(t *testing.T) {
	terminating := webPod("old", corev1.PodRunning)
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	kube := k8sfake.NewClientset(webPod("a", corev1.PodRunning), terminating, webPod("done", corev1.PodSucceeded))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := Surge(ctx, kube, "shop", "app=web", 3)
	var mu sync.Mutex
	var seen []string
	w.OnViolation(func(v string) { mu.Lock(); defer mu.Unlock(); seen = append(seen, v) })
	violations := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }

	// 3 pods (one terminating): at the limit.
	if _, err := kube.CoreV1().Pods("shop").Create(ctx, webPod("b", corev1.PodPending), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// 4: one above, with the terminating pod counted.
	if _, err := kube.CoreV1().Pods("shop").Create(ctx, webPod("c", corev1.PodPending), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return violations() > 0, nil
	}); err != nil {
		t.Fatalf("no violation reported with 4 pods and a limit of 3 (events %d)", w.Events())
	}
	w.Stop()
	mu.Lock()
	defer mu.Unlock()
	// The fake clientset may deliver the last create twice (once in the informer's initial
	// list, once on its watch), so the same state can be judged twice; what matters is that
	// 3 pods never counted as a violation and 4 did.
	for _, v := range seen {
		if !strings.Contains(v, "4 pods of app=web > replicas + maxSurge = 3") {
			t.Errorf("violation %q; want only violations of 4 pods", v)
		}
	}
	if w.Count() != len(seen) {
		t.Errorf("count %d, want %d (every violation reported)", w.Count(), len(seen))
	}
}
