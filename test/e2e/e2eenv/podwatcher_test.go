package e2eenv

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Logf(string, ...any)          {}
func (r *recorder) Error(args ...any)            { r.add(fmt.Sprint(args...)) }
func (r *recorder) Errorf(f string, args ...any) { r.add(fmt.Sprintf(f, args...)) }
func (r *recorder) Fatalf(f string, args ...any) { r.add(fmt.Sprintf(f, args...)) }
func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, s)
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Labels: map[string]string{"app": "web"}}}
}

// The watcher checks the listed pods and every change, and Verify fails on what the check found
// and on a watch that saw nothing; it needs no cluster.
func TestPodWatcher(t *testing.T) {
	kube := fake.NewClientset(pod("a"))
	e := &Env{T: t, Ctx: t.Context(), Kube: kube, NS: "ns"}
	var mu sync.Mutex
	var seen []int
	atMostTwo := func(pods map[types.UID]*corev1.Pod) []string {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, len(pods))
		if len(pods) > 2 {
			return []string{fmt.Sprintf("%d pods", len(pods))}
		}
		return nil
	}

	quiet := e.WatchPods("quiet", "app=web", atMostTwo)
	r := &recorder{TB: t}
	quiet.Verify(r)
	if len(r.failed) != 1 || !strings.Contains(r.failed[0], "the quiet watcher saw no pod event") {
		t.Errorf("a watcher that saw no change: failures %q", r.failed)
	}

	w := e.WatchPods("count", "app=web", atMostTwo)
	for _, name := range []string{"b", "c"} {
		if _, err := kube.CoreV1().Pods("ns").Create(context.Background(), pod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(Safety)
	for {
		mu.Lock()
		n := seen[len(seen)-1]
		mu.Unlock()
		if n == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	r = &recorder{TB: t}
	w.Verify(r)
	if strings.Join(r.failed, "\n") != "3 pods" {
		t.Errorf("failures %q; want the one violation \"3 pods\"", r.failed)
	}
	r = &recorder{TB: t}
	w.Verify(r)
	if len(r.failed) != 0 {
		t.Errorf("a second Verify reported again: %q", r.failed)
	}
}
