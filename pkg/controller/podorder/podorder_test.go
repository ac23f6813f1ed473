package podorder

import (
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type podOpt func(*corev1.Pod)

func node(n string) podOpt            { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func created(sec int) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(sec) * time.Second)) }
}
func ready(sinceSec int) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(epoch.Add(time.Duration(sinceSec) * time.Second)),
		})
	}
}
func notReady() podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	}
}
func restarts(n ...int32) podOpt {
	return func(p *corev1.Pod) {
		for _, r := range n {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{RestartCount: r})
		}
	}
}

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.NodeName = "n1"
	p.Status.Phase = corev1.PodRunning
	p.CreationTimestamp = metav1.NewTime(epoch)
	for _, o := range opts {
		o(p)
	}
	return p
}

func TestLess(t *testing.T) {
	cases := []struct {
		name  string
		first *corev1.Pod // the one to delete first
		then  *corev1.Pod
	}{
		{"unscheduled before scheduled", pod("a", node("")), pod("b", ready(0))},
		{"pending before unknown", pod("a", phase(corev1.PodPending)), pod("b", phase(corev1.PodUnknown))},
		{"unknown before running", pod("a", phase(corev1.PodUnknown)), pod("b")},
		{"pending before running even if older", pod("a", phase(corev1.PodPending), created(-100)), pod("b", created(100))},
		{"not ready before ready", pod("a", notReady(), created(-100)), pod("b", ready(0), created(100))},
		{"no condition counts as not ready", pod("a"), pod("b", ready(0))},
		{"ready for less time before ready for longer", pod("a", ready(50)), pod("b", ready(10))},
		{"more restarts before fewer", pod("a", restarts(0, 5)), pod("b", restarts(3, 1))},
		{"newer before older", pod("a", created(10)), pod("b", created(5))},
		{"no creation time before any", pod("a", func(p *corev1.Pod) { p.CreationTimestamp = metav1.Time{} }), pod("b", created(5))},
		{"restarts outrank age", pod("a", restarts(2), created(-10)), pod("b", restarts(1), created(10))},
		{"readiness outranks restarts", pod("a", notReady(), restarts(0)), pod("b", ready(0), restarts(9))},
		{"being deleted before not", pod("a", ready(0), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: epoch} }), pod("b", ready(50))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !Less(tc.first, tc.then) {
				t.Errorf("Less(%s, %s) = false, want true", tc.first.Name, tc.then.Name)
			}
			if Less(tc.then, tc.first) {
				t.Errorf("Less(%s, %s) = true, want false", tc.then.Name, tc.first.Name)
			}
		})
	}
	if a, b := pod("a"), pod("b"); Less(a, b) || Less(b, a) {
		t.Errorf("equal pods must not be ordered")
	}
}

func TestSort(t *testing.T) {
	want := []*corev1.Pod{
		pod("unscheduled", node(""), phase(corev1.PodPending)),
		pod("pending", phase(corev1.PodPending)),
		pod("unknown", phase(corev1.PodUnknown)),
		pod("running-not-ready", notReady()),
		pod("ready-recently-restarted", ready(100), restarts(4)),
		pod("ready-recently", ready(100)),
		pod("ready-long-newer", ready(0), created(10)),
		pod("ready-long-older", ready(0), created(5)),
	}
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 20; round++ {
		got := append([]*corev1.Pod(nil), want...)
		r.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		Sort(got)
		for i := range want {
			if got[i].Name != want[i].Name {
				names := make([]string, len(got))
				for k, p := range got {
					names[k] = p.Name
				}
				t.Fatalf("round %d: sorted to %v", round, names)
			}
		}
	}
}

func TestHelpers(t *testing.T) {
	if IsReady(pod("a", notReady())) || !IsReady(pod("b", ready(0))) {
		t.Error("IsReady")
	}
}
