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
// its template (nil if it should not run or has none), onTemplate whether pod runs info
// (templateSet.runs).
func instanceStatus(pod *corev1.Pod, want bool, info *templateInfo, onTemplate bool) appsv1alpha1.InstanceStatus {
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
		if info != nil && !onTemplate {
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
// current ones so that unchanged conditions keep their lastTransitionTime. held reports
// instances that the partition keeps off their template: the rollout is complete as far as the
// partition lets it go, but not every instance runs the new revision, so it is not current yet.
func computeStatus(t *appsv1alpha1.TApp, templates *templateSet, pods map[int]*corev1.Pod, now time.Time, fail *failure) (st appsv1alpha1.TAppStatus, held bool) {
	st = appsv1alpha1.TAppStatus{
		ObservedGeneration: t.Generation,
		ScaleLabelSelector: metav1.FormatLabelSelector(t.Spec.Selector),
		Statuses:           map[string]appsv1alpha1.InstanceStatus{},
	}
	for _, c := range t.Status.Conditions {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
	}
	replicas := desiredReplicas(t)
	maxID := replicas - 1
	for id := range pods {
		maxID = max(maxID, id)
	}
	tl := tally{complete: true, partition: int(ptr.Deref(t.Spec.UpdateStrategy.Partition, 0))}
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
			tl.killed++
		}
		onTemplate := info != nil && pod != nil && templates.runs(pod, info)
		s := instanceStatus(pod, want, info, onTemplate)
		st.Statuses[strconv.Itoa(id)] = s
		if want {
			tl.active = append(tl.active, s)
			tl.wanted++
		}
		tl.count(t, &st, id, pod, want, onTemplate, now)
	}
	st.AppStatus = appStatus(tl.active, tl.killed)
	setConditions(t, &st, &tl, now, fail)
	return st, tl.held
}

// tally is what computeStatus counts over the instances.
type tally struct {
	partition                          int
	active                             []appsv1alpha1.InstanceStatus
	killed, wanted, available, updated int
	complete, updatesPending           bool
	// held: an instance below the partition runs another template than its own.
	held bool
}

// count adds the pod of instance id (want: the instance should run; updated: the pod runs its
// template) to the status counts and the tally.
func (tl *tally) count(t *appsv1alpha1.TApp, st *appsv1alpha1.TAppStatus, id int, pod *corev1.Pod, want, updated bool, now time.Time) {
	if pod != nil && isTerminating(pod) {
		tl.complete = false
	}
	if pod == nil || isTerminating(pod) {
		if want {
			tl.complete = false
		}
		return
	}
	if !want {
		tl.complete = false
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
		return
	}
	if avail {
		tl.available++
	} else if !isFinished(pod) {
		// A finished pod the agent keeps (restart policy, neverMigrate) is done, not behind.
		tl.complete = false
	}
	if updated && !isInPlaceUpdating(pod) {
		st.UpdatedReplicas++
		tl.updated++
	}
	if !updated && !isFinished(pod) {
		if id >= tl.partition {
			tl.complete = false
			tl.updatesPending = true
		} else {
			tl.held = true
		}
	}
	if updated && isInPlaceUpdating(pod) {
		tl.complete = false
	}
}

// setConditions sets Available, Progressing and ReplicaFailure from the tally and the failure.
func setConditions(t *appsv1alpha1.TApp, st *appsv1alpha1.TAppStatus, tl *tally, now time.Time, fail *failure) {
	gen := t.Generation
	at := metav1.NewTime(now).Rfc3339Copy()
	maxUnavailable := resolveMaxUnavailable(t.Spec.UpdateStrategy.MaxUnavailable, intstr.FromInt32(1), desiredReplicas(t))
	avail := metav1.Condition{Type: appsv1alpha1.ConditionAvailable, ObservedGeneration: gen, LastTransitionTime: at,
		Message: fmt.Sprintf("%d of %d instances available (at most %d may be unavailable)", tl.available, tl.wanted, maxUnavailable)}
	if tl.available >= tl.wanted-maxUnavailable {
		avail.Status, avail.Reason = metav1.ConditionTrue, appsv1alpha1.ReasonMinimumAvailable
	} else {
		avail.Status, avail.Reason = metav1.ConditionFalse, appsv1alpha1.ReasonMinimumUnavailable
	}
	meta.SetStatusCondition(&st.Conditions, avail)

	prog := metav1.Condition{Type: appsv1alpha1.ConditionProgressing, ObservedGeneration: gen, LastTransitionTime: at}
	switch {
	case t.Spec.UpdateStrategy.Paused && tl.updatesPending:
		prog.Status, prog.Reason = metav1.ConditionFalse, appsv1alpha1.ReasonRolloutPaused
		prog.Message = fmt.Sprintf("updates are paused with %d of %d instances updated", tl.updated, tl.wanted)
	case tl.complete:
		prog.Status, prog.Reason = metav1.ConditionTrue, appsv1alpha1.ReasonRolloutComplete
		prog.Message = fmt.Sprintf("all %d instances are up to date and available", tl.wanted)
	default:
		prog.Status, prog.Reason = metav1.ConditionTrue, appsv1alpha1.ReasonRolloutInProgress
		prog.Message = fmt.Sprintf("%d of %d instances updated, %d available", tl.updated, tl.wanted, tl.available)
	}
	meta.SetStatusCondition(&st.Conditions, prog)

	if fail != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: appsv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue,
			Reason: fail.reason, Message: fail.message, ObservedGeneration: gen, LastTransitionTime: at})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, appsv1alpha1.ConditionReplicaFailure)
	}
}
