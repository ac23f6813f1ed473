// Package podorder orders pods the way Kubernetes' ReplicaSet controller picks pods to delete
// (the ActivePods order of k8s.io/kubernetes/pkg/controller): the pod that is cheapest to lose
// sorts first. The agent's controllers use it whenever they choose among several deletions.
package podorder

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// phaseOrdinal ranks pod phases: Pending < Unknown < Running. Finished phases rank with Pending
// (they are not doing any work either).
var phaseOrdinal = map[corev1.PodPhase]int{
	corev1.PodPending: 0,
	corev1.PodUnknown: 1,
	corev1.PodRunning: 2,
}

// Less reports whether a should be deleted before b:
//  1. unscheduled < scheduled;
//  2. Pending < Unknown < Running;
//  3. not ready < ready;
//  4. if both are ready: ready for a shorter time < ready for longer;
//  5. more container restarts < fewer;
//  6. newer (or no creation time) < older.
func Less(a, b *corev1.Pod) bool {
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrdinal[a.Status.Phase], phaseOrdinal[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	ra, rb := IsReady(a), IsReady(b)
	if ra != rb {
		return !ra
	}
	if ra && rb {
		ta, tb := readyTime(a), readyTime(b)
		if !ta.Equal(tb) {
			return afterOrZero(ta, tb)
		}
	}
	if ca, cb := MaxContainerRestarts(a), MaxContainerRestarts(b); ca != cb {
		return ca > cb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return afterOrZero(&a.CreationTimestamp, &b.CreationTimestamp)
	}
	return false
}

// ActivePods sorts with Less; sort.Sort(ActivePods(pods)) puts the pods to delete first.
type ActivePods []*corev1.Pod

func (s ActivePods) Len() int           { return len(s) }
func (s ActivePods) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }
func (s ActivePods) Less(i, j int) bool { return Less(s[i], s[j]) }

// Sort sorts pods in place, pods to delete first. It is stable, so callers can pre-sort by a
// tie-breaker of their own (for example the highest instance id first).
func Sort(pods []*corev1.Pod) {
	sort.Stable(ActivePods(pods))
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(pod *corev1.Pod) bool {
	c := condition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// MaxContainerRestarts is the highest restart count among the pod's containers.
func MaxContainerRestarts(pod *corev1.Pod) int32 {
	var m int32
	for _, cs := range pod.Status.ContainerStatuses {
		m = max(m, cs.RestartCount)
	}
	return m
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func readyTime(pod *corev1.Pod) *metav1.Time {
	if c := condition(pod, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
		return &c.LastTransitionTime
	}
	return &metav1.Time{}
}

// afterOrZero reports whether t1 is after t2, with a zero time counting as the latest.
func afterOrZero(t1, t2 *metav1.Time) bool {
	if t1.Time.IsZero() || t2.Time.IsZero() {
		return t1.Time.IsZero()
	}
	return t1.After(t2.Time)
}
