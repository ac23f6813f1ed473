// Package podorder orders pods the way Kubernetes' ReplicaSet controller picks pods to delete:
// the pod that is cheapest to lose sorts first. The order is kubectl's own
// (k8s.io/kubectl/pkg/util/podutils.ActivePods, the same ActivePods order as
// k8s.io/kubernetes/pkg/controller), so that the agent and Kubernetes never disagree on it; this
// package only adds a stable sort, which the controllers need for their own tie-breakers.
package podorder

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubectl/pkg/util/podutils"
)

// Less reports whether a should be deleted before b:
//  1. unscheduled < scheduled;
//  2. Pending < Unknown < Running;
//  3. not ready < ready;
//  4. being deleted < not (older deletion first);
//  5. if both are ready: ready for a shorter time < ready for longer;
//  6. more container restarts < fewer;
//  7. newer (or no creation time) < older.
func Less(a, b *corev1.Pod) bool {
	return podutils.ActivePods{a, b}.Less(0, 1)
}

// Sort sorts pods in place, pods to delete first. It is stable, so callers can pre-sort by a
// tie-breaker of their own (for example the highest instance id first).
func Sort(pods []*corev1.Pod) {
	sort.Stable(podutils.ActivePods(pods))
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(pod *corev1.Pod) bool {
	return podutils.IsPodReady(pod)
}
