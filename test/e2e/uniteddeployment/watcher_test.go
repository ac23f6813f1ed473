package uniteddeployment

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The surge watcher itself must be able to fail: it needs no cluster.
func TestSurgeWatcherCounts(t *testing.T) {
	pod := func(name, subset, owner string, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
			Labels:          map[string]string{appsv1alpha1.LabelSubsetName: subset},
			OwnerReferences: []metav1.OwnerReference{{Kind: owner, Name: "w", Controller: ptrTrue()}}}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	pods := map[types.UID]*corev1.Pod{}
	add := func(p *corev1.Pod) { pods[p.UID] = p }
	sw := &surgeWatcher{allowed: map[string]int32{"zone-a": 2, "zone-b": 4}}

	add(pod("a0", "zone-a", "StatefulSet", false))
	add(pod("a1", "zone-a", "StatefulSet", false))
	add(pod("a2", "zone-a", "StatefulSet", true)) // terminating: not counted
	add(pod("t0", "zone-a", "TApp", false))       // another kind: counted apart
	add(pod("t1", "zone-a", "TApp", false))
	for _, n := range []string{"b0", "b1", "b2", "b3", "b4"} { // 4 + 25% surge (1)
		add(pod(n, "zone-b", "ReplicaSet", false))
	}
	if violations := sw.check(pods); len(violations) != 0 {
		t.Fatalf("violations %v", violations)
	}

	add(pod("a3", "zone-a", "StatefulSet", false))
	add(pod("b5", "zone-b", "ReplicaSet", false))
	add(pod("c0", "zone-c", "StatefulSet", false))
	got := strings.Join(sw.check(pods), "\n")
	for _, want := range []string{
		"subset zone-a runs 3 live pods owned by a StatefulSet, more than its 2 replicas + 0 surge",
		"subset zone-b runs 6 live pods owned by a ReplicaSet, more than its 4 replicas + 1 surge",
		`belong to subset "zone-c", which was never allocated`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %q:\n%s", want, got)
		}
	}
}

func ptrTrue() *bool { b := true; return &b }
