package tapp

import (
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// deletionReason says why the controller deletes a pod.
type deletionReason string

const (
	deleteScaleDown deletionReason = "ScaleDown" // the id is no longer below replicas
	deleteKill      deletionReason = "Kill"      // spec.statuses[id] is Killed
	deleteRestart   deletionReason = "Restart"   // a finished pod is re-created per its restart policy
	deleteRecreate  deletionReason = "Recreate"  // an update that cannot be done in place
)

type podDeletion struct {
	pod    *corev1.Pod
	id     int
	reason deletionReason
}

type instanceToCreate struct {
	id   int
	info *templateInfo
}

type inPlaceUpdate struct {
	pod *corev1.Pod
	id  int
	to  *templateInfo
	// closeGate: set the readiness gate False first.
	closeGate bool
	// apply: resize and patch the pod now; false while the grace period runs.
	apply bool
	// resizeOnly: the pod's template and to differ only in resource values (resizeOnlyHash):
	// the resize is the whole update, the labels follow with the gate's opening (if any).
	resizeOnly bool
}

// gateOpening is a readiness gate to open; relabel, when set, is the template whose hash labels
// the status patch writes too (a resize-only update, which could not write them).
type gateOpening struct {
	pod     *corev1.Pod
	relabel *templateInfo
}

// plan is what one sync should do, computed from the informer caches only.
type plan struct {
	// creates are the instances that need a pod, in ascending id order.
	creates []instanceToCreate
	// deletes: scale-down, kills and restarts in ActivePods order, then re-creations in id order.
	deletes []podDeletion
	// inPlace are the image, resource and label updates of running pods, in id order.
	inPlace []inPlaceUpdate
	// markReady are pods whose ConditionInPlaceUpdateReady should be set True.
	markReady []gateOpening
	// stuck are terminating pods past their deletion deadline (only with spec.forceDeletePod).
	stuck []*corev1.Pod
	// requeueAfter, when positive, is when the sync should run again to re-check time-based
	// state (minReadySeconds, a terminating pod's deadline).
	requeueAfter time.Duration
	// problems are instances the controller cannot manage (e.g. a template missing from the pool).
	problems []string
}

func (p *plan) requeueIn(d time.Duration) {
	if d > 0 && (p.requeueAfter == 0 || d < p.requeueAfter) {
		p.requeueAfter = d
	}
}

// desiredReplicas is spec.replicas, 1 when unset (the CRD default).
func desiredReplicas(t *appsv1alpha1.TApp) int {
	return int(appsv1alpha1.ReplicasOrDefault(t.Spec.Replicas))
}

func isKilled(t *appsv1alpha1.TApp, id int) bool {
	return t.Spec.Statuses[strconv.Itoa(id)] == appsv1alpha1.InstanceKilled
}

// restartNeeded says whether a finished pod is re-created, per its restart policy.
func restartNeeded(pod *corev1.Pod) bool {
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return pod.Status.Phase == corev1.PodFailed
	default:
		return true
	}
}

// resolveMaxUnavailable turns an int-or-percent of replicas into a count, rounding percentages
// down, and never below 1 so that an update can always make progress.
func resolveMaxUnavailable(v *intstr.IntOrString, def intstr.IntOrString, replicas int) int {
	if v == nil {
		v = &def
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, false)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// RollingTemplate is the name of the template whose instances roll within
// updateStrategy.maxUnavailable: updateStrategy.template, or when that is empty the default
// template (defaultTemplateName, or "" for spec.template). Instances on any other template are
// force-updated within updateStrategy.forceUpdate.maxUnavailable.
func RollingTemplate(t *appsv1alpha1.TApp) string {
	if t.Spec.UpdateStrategy.Template != "" {
		return t.Spec.UpdateStrategy.Template
	}
	return t.Spec.DefaultTemplateName
}

// updateState is what the update math needs to know of one instance that should run.
type updateState struct {
	id int
	// rolling: the instance runs updateStrategy.template, so it rolls within maxUnavailable;
	// otherwise it is force-updated within forceUpdate.maxUnavailable.
	rolling bool
	// needsUpdate: its pod runs another template than the instance's, and can be updated now.
	needsUpdate bool
	// available: its pod is available (a missing pod is not).
	available bool
}

// pickUpdates chooses which instances to update now. states must be sorted by id and hold every
// instance that should run. Nothing is updated while paused, nor any id below partition. Each
// group (rolling and forced) has its own budget: its maxUnavailable minus its instances that are
// unavailable already. Candidates are taken in ascending id order; a candidate that is itself
// unavailable costs nothing (updating it cannot make things worse), any other takes one unit of
// its group's budget.
func pickUpdates(states []updateState, partition int, paused bool, rollLimit, forceLimit int) []int {
	if paused {
		return nil
	}
	budget := map[bool]int{true: rollLimit, false: forceLimit}
	for _, s := range states {
		if !s.available {
			budget[s.rolling]--
		}
	}
	var out []int
	for _, s := range states {
		if !s.needsUpdate || s.id < partition {
			continue
		}
		if !s.available {
			out = append(out, s.id)
			continue
		}
		if budget[s.rolling] > 0 {
			budget[s.rolling]--
			out = append(out, s.id)
		}
	}
	return out
}

// computePlan decides what a sync does. pods maps instance ids to the TApp's pods in the cache;
// inFlight reports pods with a write of ours the cache does not show yet.
func computePlan(t *appsv1alpha1.TApp, templates *templateSet, pods map[int]*corev1.Pod, now time.Time, inFlight func(*corev1.Pod) bool) *plan {
	p := &plan{}
	replicas := desiredReplicas(t)
	ids := make([]int, 0, len(pods))
	for id := range pods {
		ids = append(ids, id)
	}
	sort.Ints(ids)

	reasons := p.planDeletions(t, ids, pods, replicas, now)
	states := p.planInstances(t, templates, pods, replicas, now, inFlight)
	updating := p.planUpdates(t, templates, pods, states, replicas, now)
	p.planGates(templates, ids, pods, replicas, inFlight, func(id int, pod *corev1.Pod) bool {
		return updating[id] || reasons[pod] != ""
	})
	return p
}

// planDeletions plans the deletions that do not depend on the update budget (scale down, kill,
// restart of a finished pod) and the force deletion of stuck pods; it returns why each pod goes.
func (p *plan) planDeletions(t *appsv1alpha1.TApp, ids []int, pods map[int]*corev1.Pod, replicas int, now time.Time) map[*corev1.Pod]deletionReason {
	var gone []*corev1.Pod
	reasons := map[*corev1.Pod]deletionReason{}
	for _, id := range ids {
		pod := pods[id]
		if isTerminating(pod) {
			if t.Spec.ForceDeletePod {
				if left := pod.DeletionTimestamp.Sub(now); left <= 0 {
					p.stuck = append(p.stuck, pod)
				} else {
					p.requeueIn(left)
				}
			}
			continue
		}
		var reason deletionReason
		switch {
		case id >= replicas:
			reason = deleteScaleDown
		case isKilled(t, id):
			reason = deleteKill
		case isFinished(pod) && !t.Spec.NeverMigrate && restartNeeded(pod):
			reason = deleteRestart
		default:
			continue
		}
		gone = append(gone, pod)
		reasons[pod] = reason
	}
	sortForDeletion(gone)
	for _, pod := range gone {
		id, _ := instanceID(pod)
		p.deletes = append(p.deletes, podDeletion{pod: pod, id: id, reason: reasons[pod]})
	}
	return reasons
}

// planInstances plans the creations and returns the update state of every instance that should
// run.
func (p *plan) planInstances(t *appsv1alpha1.TApp, templates *templateSet, pods map[int]*corev1.Pod, replicas int, now time.Time, inFlight func(*corev1.Pod) bool) []updateState {
	rolling := RollingTemplate(t)
	var states []updateState
	for id := 0; id < replicas; id++ {
		if isKilled(t, id) {
			continue
		}
		info, err := templates.forInstance(id)
		if err != nil {
			p.problems = append(p.problems, err.Error())
			continue
		}
		pod := pods[id]
		if pod == nil {
			from, _ := templates.forNewInstance(id)
			p.creates = append(p.creates, instanceToCreate{id: id, info: from})
			states = append(states, updateState{id: id, rolling: info.name == rolling})
			continue
		}
		avail, wait := podAvailable(pod, t.Spec.MinReadySeconds, now)
		p.requeueIn(wait)
		busy := inFlight(pod)
		states = append(states, updateState{
			id:          id,
			rolling:     info.name == rolling,
			available:   avail && !busy && !isInPlaceUpdating(pod),
			needsUpdate: !busy && !isTerminating(pod) && !isFinished(pod) && !templates.runs(pod, info),
		})
	}
	return states
}

// planUpdates picks the updates the budgets allow, in place or by re-creation, and returns the
// instances it updates.
func (p *plan) planUpdates(t *appsv1alpha1.TApp, templates *templateSet, pods map[int]*corev1.Pod, states []updateState, replicas int, now time.Time) map[int]bool {
	grace := time.Duration(t.Spec.UpdateStrategy.InPlaceUpdate.GracePeriodSeconds) * time.Second
	partition := int(ptr.Deref(t.Spec.UpdateStrategy.Partition, 0))
	rollLimit := resolveMaxUnavailable(t.Spec.UpdateStrategy.MaxUnavailable, intstr.FromInt32(1), replicas)
	forceLimit := resolveMaxUnavailable(t.Spec.UpdateStrategy.ForceUpdate.MaxUnavailable, intstr.FromString("100%"), replicas)
	updating := map[int]bool{}
	for _, id := range pickUpdates(states, partition, t.Spec.UpdateStrategy.Paused, rollLimit, forceLimit) {
		pod := pods[id]
		info, _ := templates.forInstance(id)
		updating[id] = true
		if inPlaceCompatible(pod, info) {
			u, wait := planInPlace(pod, id, info, grace, now)
			u.resizeOnly = templates.resizeOnly(pod, info)
			p.requeueIn(wait)
			if u.closeGate || u.apply {
				p.inPlace = append(p.inPlace, u)
			}
		} else {
			p.deletes = append(p.deletes, podDeletion{pod: pod, id: id, reason: deleteRecreate})
		}
	}
	return updating
}

// planGates plans the readiness gates to open, on pods this plan neither deletes nor updates
// (planned reports those) and that have no write in flight.
func (p *plan) planGates(templates *templateSet, ids []int, pods map[int]*corev1.Pod, replicas int, inFlight func(*corev1.Pod) bool, planned func(int, *corev1.Pod) bool) {
	for _, id := range ids {
		pod := pods[id]
		if planned(id, pod) || inFlight(pod) {
			continue
		}
		var desired *templateInfo
		if id < replicas {
			desired, _ = templates.forInstance(id)
		}
		if ok, relabel := shouldMarkReady(pod, templates, desired); ok {
			p.markReady = append(p.markReady, gateOpening{pod: pod, relabel: relabel})
		}
	}
}
