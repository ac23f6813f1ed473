package tapp

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/podorder"
)

// failure is a ReplicaFailure to report, or nil.
type failure struct {
	reason, message string
}

// instanceStatus is the observed status of instance id: want says whether it should run, info is
// its template (nil if it should not run or has none).
func instanceStatus(pod *corev1.Pod, want bool, info *templateInfo) appsv1alpha1.InstanceStatus {
	if pod == nil {
		if want {
			return appsv1alpha1.InstanceNotCreated
		}
		return appsv1alpha1.InstanceKilledNow
	}
	if isTerminating(pod) || !want {
		if !want {
			return appsv1alpha1.InstanceKilling
		}
		if info != nil && pod.Labels[appsv1alpha1.LabelTemplateHash] != info.hash {
			return appsv1alpha1.InstanceUpdating
		}
		return appsv1alpha1.InstancePending
	}
	switch pod.Status.Phase {
	case corev1.PodPending:
		return appsv1alpha1.InstancePending
	case corev1.PodRunning:
		if isInPlaceUpdating(pod) {
			return appsv1alpha1.InstanceUpdating
		}
		return appsv1alpha1.InstanceRunningNow
	case corev1.PodSucceeded:
		return appsv1alpha1.InstancePodSucc
	case corev1.PodFailed:
		return appsv1alpha1.InstancePodFailed
	default:
		return appsv1alpha1.InstanceUnknown
	}
}

// appStatus sums up the statuses of the instances that should run (active); killed is how many
// instances below replicas are killed.
func appStatus(active []appsv1alpha1.InstanceStatus, killed int) appsv1alpha1.AppStatus {
	if len(active) == 0 {
		if killed > 0 {
			return appsv1alpha1.AppKilled
		}
		return appsv1alpha1.AppRunning
	}
	finished, failed, running := 0, 0, 0
	for _, s := range active {
		switch s {
		case appsv1alpha1.InstancePodSucc, appsv1alpha1.InstanceSucc:
			finished++
		case appsv1alpha1.InstancePodFailed, appsv1alpha1.InstanceFailed:
			finished++
			failed++
		case appsv1alpha1.InstanceRunningNow, appsv1alpha1.InstanceUpdating:
			running++
		}
	}
	switch {
	case finished == len(active) && failed > 0:
		return appsv1alpha1.AppFailed
	case finished == len(active):
		return appsv1alpha1.AppSucc
	case running > 0:
		return appsv1alpha1.AppRunning
	default:
		return appsv1alpha1.AppPending
	}
}

// computeStatus derives the TApp's status from its pods in the cache. Conditions start from the
// current ones so that unchanged conditions keep their lastTransitionTime.
func computeStatus(t *appsv1alpha1.TApp, templates *templateSet, pods map[int]*corev1.Pod, now time.Time, fail *failure) appsv1alpha1.TAppStatus {
	st := appsv1alpha1.TAppStatus{
		ObservedGeneration: t.Generation,
		ScaleLabelSelector: metav1.FormatLabelSelector(t.Spec.Selector),
		Statuses:           map[string]appsv1alpha1.InstanceStatus{},
	}
	for _, c := range t.Status.Conditions {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
	}
	replicas := desiredReplicas(t)
	partition := int(ptr.Deref(t.Spec.UpdateStrategy.Partition, 0))

	maxID := replicas - 1
	for id := range pods {
		maxID = max(maxID, id)
	}
	var active []appsv1alpha1.InstanceStatus
	killed, wanted, wantedAvailable, wantedUpdated := 0, 0, 0, 0
	complete, updatesPending := true, false
	for id := 0; id <= maxID; id++ {
		pod := pods[id]
		if id >= replicas && pod == nil {
			continue
		}
		want := id < replicas && !isKilled(t, id)
		var info *templateInfo
		if want {
			info, _ = templates.forInstance(id)
		}
		if !want && id < replicas {
			killed++
		}
		s := instanceStatus(pod, want, info)
		st.Statuses[strconv.Itoa(id)] = s
		if want {
			active = append(active, s)
			wanted++
		}
		if pod != nil && isTerminating(pod) {
			complete = false
		}
		if pod == nil || isTerminating(pod) {
			if want {
				complete = false
			}
			continue
		}
		if !want {
			complete = false
		}
		st.Replicas++
		if podorder.IsReady(pod) {
			st.ReadyReplicas++
		}
		avail, _ := podAvailable(pod, t.Spec.MinReadySeconds, now)
		if avail {
			st.AvailableReplicas++
		}
		if !want {
			continue
		}
		if avail {
			wantedAvailable++
		} else if !isFinished(pod) {
			// A finished pod the agent keeps (restart policy, neverMigrate) is done, not behind.
			complete = false
		}
		updated := info != nil && pod.Labels[appsv1alpha1.LabelTemplateHash] == info.hash
		if updated && !isInPlaceUpdating(pod) {
			st.UpdatedReplicas++
			wantedUpdated++
		}
		if !updated && id >= partition && !isFinished(pod) {
			complete = false
			updatesPending = true
		}
		if updated && isInPlaceUpdating(pod) {
			complete = false
		}
	}
	st.AppStatus = appStatus(active, killed)

	gen := t.Generation
	at := metav1.NewTime(now).Rfc3339Copy()
	maxUnavailable := resolveMaxUnavailable(t.Spec.UpdateStrategy.MaxUnavailable, intstr.FromInt32(1), replicas)
	avail := metav1.Condition{Type: appsv1alpha1.ConditionAvailable, ObservedGeneration: gen, LastTransitionTime: at,
		Message: fmt.Sprintf("%d of %d instances available (at most %d may be unavailable)", wantedAvailable, wanted, maxUnavailable)}
	if wantedAvailable >= wanted-maxUnavailable {
		avail.Status, avail.Reason = metav1.ConditionTrue, appsv1alpha1.ReasonMinimumAvailable
	} else {
		avail.Status, avail.Reason = metav1.ConditionFalse, appsv1alpha1.ReasonMinimumUnavailable
	}
	meta.SetStatusCondition(&st.Conditions, avail)

	prog := metav1.Condition{Type: appsv1alpha1.ConditionProgressing, ObservedGeneration: gen, LastTransitionTime: at}
	switch {
	case t.Spec.UpdateStrategy.Paused && updatesPending:
		prog.Status, prog.Reason = metav1.ConditionFalse, appsv1alpha1.ReasonRolloutPaused
		prog.Message = fmt.Sprintf("updates are paused with %d of %d instances updated", wantedUpdated, wanted)
	case complete:
		prog.Status, prog.Reason = metav1.ConditionTrue, appsv1alpha1.ReasonRolloutComplete
		prog.Message = fmt.Sprintf("all %d instances are up to date and available", wanted)
	default:
		prog.Status, prog.Reason = metav1.ConditionTrue, appsv1alpha1.ReasonRolloutInProgress
		prog.Message = fmt.Sprintf("%d of %d instances updated, %d available", wantedUpdated, wanted, wantedAvailable)
	}
	meta.SetStatusCondition(&st.Conditions, prog)

	if fail != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: appsv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue,
			Reason: fail.reason, Message: fail.message, ObservedGeneration: gen, LastTransitionTime: at})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, appsv1alpha1.ConditionReplicaFailure)
	}
	return st
}
