package workload

import (
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodStatus(t *testing.T) {
	now := metav1.Now()
	waiting := func(r string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r}}
	}
	for _, tt := range []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"no status", corev1.Pod{}, "Pending"},
		{"running", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, "Running"},
		{"terminating", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, "Terminating"},
		{"evicted", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}, "Evicted"},
		{"image pull", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{State: waiting("ImagePullBackOff")}}}}, "ImagePullBackOff"},
		{"init failed", corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{}}}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}}}, "Init:Error"},
		{"init running", corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{}, {}}}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			InitContainerStatuses: []corev1.ContainerStatus{
				{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
				{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}, "Init:1/2"},
	} {
		if got := PodStatus(&tt.pod); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestPodsSortByOrdinal(t *testing.T) {
	names := []string{"web-10", "web-2", "web-1", "api-0", "web-x"}
	sort.Slice(names, func(i, j int) bool { return podLess(names[i], names[j]) })
	want := []string{"api-0", "web-1", "web-2", "web-10", "web-x"}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("got %v, want %v", names, want)
		}
	}
}
