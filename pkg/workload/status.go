package workload

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// RolloutState sums up where a workload's rollout stands.
type RolloutState string

const (
	// StateProgressing: the rollout is moving (or the status is older than the spec).
	StateProgressing RolloutState = "Progressing"
	// StatePaused: the rollout waits for a person: paused, a Canary batch waiting for promote, or
	// pods held on the old revision by a partition.
	StatePaused RolloutState = "Paused"
	// StateComplete: every pod runs the latest spec and is available, as of the latest generation.
	StateComplete RolloutState = "Complete"
	// StateDegraded: the rollout failed or was rolled back; it will not complete by itself.
	StateDegraded RolloutState = "Degraded"
)

// RolloutStatus is what a StatusViewer reads from an object.
type RolloutStatus struct {
	State RolloutState
	// Phase is the one word shown for the object: the state, or a Canary's own phase (which
	// says more, such as RollingBack or RolledBack).
	Phase string
	// Summary is one line saying where the rollout stands, without the object's name.
	Summary string
	// Progress holds a line per batch, subset or group of instances (may be empty).
	Progress []string
	// Stale is true while the status describes an older generation than the spec: the
	// controller has not caught up, so the status cannot say the rollout is complete.
	Stale bool
}

// Done reports whether the rollout is complete.
func (s RolloutStatus) Done() bool { return s.State == StateComplete }

// Degraded reports whether the rollout failed.
func (s RolloutStatus) Degraded() bool { return s.State == StateDegraded }

// Paused reports whether the rollout waits for a person.
func (s RolloutStatus) Paused() bool { return s.State == StatePaused }

// StatusViewer reads a rollout's progress from an object, after kubectl's polymorphic
// StatusViewer.
type StatusViewer interface {
	Status(obj *unstructured.Unstructured) (RolloutStatus, error)
}

type statusViewerFunc func(obj *unstructured.Unstructured) (RolloutStatus, error)

func (f statusViewerFunc) Status(obj *unstructured.Unstructured) (RolloutStatus, error) {
	return f(obj)
}

var statusViewers = map[string]StatusViewer{
	TApp.Name:             statusViewerFunc(tappStatus),
	UnitedDeployment.Name: statusViewerFunc(unitedDeploymentStatus),
	Canary.Name:           statusViewerFunc(canaryStatus),
	Deployment.Name:       statusViewerFunc(deploymentStatus),
	StatefulSet.Name:      statusViewerFunc(statefulSetStatus),
}

// Viewable lists the kinds whose rollout status can be read: all of them.
var Viewable = []Kind{TApp, UnitedDeployment, Canary, Deployment, StatefulSet}

// StatusViewerFor returns the StatusViewer of a kind.
func StatusViewerFor(k Kind) (StatusViewer, error) {
	v, ok := statusViewers[k.Name]
	if !ok {
		return nil, fmt.Errorf("no status viewer for a %s", k.Name)
	}
	return v, nil
}

// RolloutStatusOf is StatusViewerFor(k).Status(obj).
func RolloutStatusOf(k Kind, obj *unstructured.Unstructured) (RolloutStatus, error) {
	v, err := StatusViewerFor(k)
	if err != nil {
		return RolloutStatus{}, err
	}
	return v.Status(obj)
}

func fromUnstructured(obj *unstructured.Unstructured, into interface{}) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("reading %s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

func status(state RolloutState, summary string, progress []string) RolloutStatus {
	return RolloutStatus{State: state, Phase: string(state), Summary: summary, Progress: progress}
}

// staleStatus is the status of an object whose controller has not observed its latest spec.
func staleStatus(controller string, generation, observed int64, progress []string) RolloutStatus {
	s := status(StateProgressing, "", progress)
	s.Stale = true
	if observed == 0 {
		s.Summary = fmt.Sprintf("waiting for %s to report status", controller)
		if controller == agentName {
			s.Summary += " (is the agent installed and running? see kubectl workload install)"
		}
	} else {
		s.Summary = fmt.Sprintf("waiting for %s to observe the latest spec (generation %d; status is of generation %d)", controller, generation, observed)
	}
	return s
}

const (
	agentName = "the workload-agent"
	kcmName   = "kube-controller-manager"
)

func trueCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return c
}

func plural(n int32, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func tappStatus(obj *unstructured.Unstructured) (RolloutStatus, error) {
	var t v1alpha1.TApp
	if err := fromUnstructured(obj, &t); err != nil {
		return RolloutStatus{}, err
	}
	st := t.Status
	replicas := v1alpha1.ReplicasOrDefault(t.Spec.Replicas)
	partition := deref(t.Spec.UpdateStrategy.Partition, 0)
	// The instances that should run: ids below replicas that are not killed; of those, the ones
	// at or above the partition are the ones the rollout moves.
	var wanted, rolled int32
	for id := int32(0); id < replicas; id++ {
		if t.Spec.Statuses[strconv.Itoa(int(id))] == v1alpha1.InstanceKilled {
			continue
		}
		wanted++
		if id >= partition {
			rolled++
		}
	}
	progress := instanceProgress(st.Statuses)
	if t.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(agentName, t.Generation, st.ObservedGeneration, progress), nil
	}
	counts := fmt.Sprintf("%d of %s updated, %d ready, %d available", st.UpdatedReplicas, plural(wanted, "instance", "instances"), st.ReadyReplicas, st.AvailableReplicas)
	if c := trueCondition(st.Conditions, v1alpha1.ConditionReplicaFailure); c != nil {
		failure := fmt.Sprintf("%s: %s; %s", c.Reason, c.Message, counts)
		if v1alpha1.TAppSpecFailures[c.Reason] {
			return status(StateDegraded, failure, progress), nil
		}
		// A failed create or delete is retried by the agent: report it, keep waiting.
		counts = failure
	}
	if st.AppStatus == v1alpha1.AppFailed {
		return status(StateDegraded, "instances failed; "+counts, progress), nil
	}
	var complete bool
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); c != nil && c.ObservedGeneration >= t.Generation {
		complete = c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonRolloutComplete
	} else {
		complete = st.UpdatedReplicas >= rolled && st.AvailableReplicas >= wanted && st.Replicas <= wanted
	}
	switch {
	case complete && partition > 0 && st.UpdatedReplicas < wanted:
		return status(StatePaused, fmt.Sprintf("held by partition %d (instances below it keep their template); %s", partition, counts), progress), nil
	case complete:
		return status(StateComplete, counts, progress), nil
	case t.Spec.UpdateStrategy.Paused:
		return status(StatePaused, "updates paused; "+counts, progress), nil
	}
	return status(StateProgressing, counts, progress), nil
}

// instanceOrder is the order in which instance statuses are listed: running, moving, stopped,
// failed.
var instanceOrder = []v1alpha1.InstanceStatus{
	v1alpha1.InstanceRunningNow, v1alpha1.InstanceUpdating, v1alpha1.InstancePending, v1alpha1.InstanceNotCreated,
	v1alpha1.InstanceKilling, v1alpha1.InstanceKilledNow, v1alpha1.InstancePodSucc, v1alpha1.InstanceSucc,
	v1alpha1.InstancePodFailed, v1alpha1.InstanceFailed, v1alpha1.InstanceUnknown,
}

// maxRanges bounds the id ranges listed per status, so that a line stays readable for a TApp of
// thousands of instances.
const maxRanges = 12

// instanceProgress groups a TApp's instances by status: one line per status, with the ids as
// ranges ("Running     4  0-2, 4").
func instanceProgress(statuses map[string]v1alpha1.InstanceStatus) []string {
	ids := map[v1alpha1.InstanceStatus][]int{}
	for id, s := range statuses {
		n, err := strconv.Atoi(id)
		if err != nil {
			continue
		}
		ids[s] = append(ids[s], n)
	}
	order := append([]v1alpha1.InstanceStatus{}, instanceOrder...)
	var others []string
	for s := range ids {
		if !instanceStatusKnown(s) {
			others = append(others, string(s))
		}
	}
	sort.Strings(others)
	for _, s := range others {
		order = append(order, v1alpha1.InstanceStatus(s))
	}
	var lines []string
	for _, s := range order {
		list := ids[s]
		if len(list) == 0 {
			continue
		}
		sort.Ints(list)
		lines = append(lines, fmt.Sprintf("%-10s %5d  %s", s, len(list), idRanges(list)))
	}
	return lines
}

func instanceStatusKnown(s v1alpha1.InstanceStatus) bool {
	for _, k := range instanceOrder {
		if k == s {
			return true
		}
	}
	return false
}

// idRanges writes sorted ids as "0-2, 4, 7-9", at most maxRanges ranges.
func idRanges(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if len(parts) == maxRanges {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(ids)-i))
			break
		}
		if i == j {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func unitedDeploymentStatus(obj *unstructured.Unstructured) (RolloutStatus, error) {
	var ud v1alpha1.UnitedDeployment
	if err := fromUnstructured(obj, &ud); err != nil {
		return RolloutStatus{}, err
	}
	st := ud.Status
	replicas := v1alpha1.ReplicasOrDefault(ud.Spec.Replicas)
	width := 0
	for _, s := range st.SubsetStatuses {
		width = max(width, len(s.Name))
	}
	var progress, held []string
	// waiting: some subset has pods it may update but has not yet (beyond its partition).
	waiting := false
	for _, s := range st.SubsetStatuses {
		line := fmt.Sprintf("%-*s  %d/%d ready  %d/%d updated", width, s.Name, s.ReadyReplicas, s.Replicas, s.UpdatedReplicas, s.Replicas)
		if s.Partition > 0 {
			line += fmt.Sprintf("  partition %d", s.Partition)
			if s.UpdatedReplicas < s.Replicas {
				held = append(held, fmt.Sprintf("%s=%d", s.Name, s.Partition))
			}
		}
		if s.UpdatedReplicas < s.Replicas-s.Partition {
			waiting = true
		}
		progress = append(progress, line)
	}
	if ud.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(agentName, ud.Generation, st.ObservedGeneration, progress), nil
	}
	revision := ""
	if st.UpdatedRevision != "" {
		revision = " (revision " + st.UpdatedRevision + ")"
	}
	counts := fmt.Sprintf("%d of %s updated%s, %d ready", st.UpdatedReplicas, plural(replicas, "pod", "pods"), revision, st.ReadyReplicas)
	if c := trueCondition(st.Conditions, v1alpha1.SubsetFailure); c != nil {
		return status(StateDegraded, fmt.Sprintf("%s: %s; %s", c.Reason, c.Message, counts), progress), nil
	}
	complete := st.Replicas == replicas && st.UpdatedReplicas >= replicas && st.UpdatedReadyReplicas >= replicas && st.ReadyReplicas >= replicas
	switch {
	case complete:
		return status(StateComplete, counts, progress), nil
	case ud.Spec.UpdateStrategy.Paused:
		return status(StatePaused, "updates paused; "+counts, progress), nil
	case len(held) > 0 && !waiting && st.Replicas == replicas && st.ReadyReplicas >= replicas:
		return status(StatePaused, fmt.Sprintf("held by partitions %s; %s", strings.Join(held, ", "), counts), progress), nil
	}
	return status(StateProgressing, counts, progress), nil
}

func canaryStatus(obj *unstructured.Unstructured) (RolloutStatus, error) {
	var c v1alpha1.Canary
	if err := fromUnstructured(obj, &c); err != nil {
		return RolloutStatus{}, err
	}
	st := c.Status
	total := int32(len(st.Batches))
	var progress []string
	width := 0
	for _, b := range st.Batches {
		width = max(width, len(plural(b.CanaryReplicas, "canary pod", "canary pods")))
	}
	for _, b := range st.Batches {
		mark := " "
		if b.Index == st.CurrentBatch {
			mark = ">"
		}
		progress = append(progress, fmt.Sprintf("%s batch %d/%d  %-*s  %s", mark, b.Index, total, width, plural(b.CanaryReplicas, "canary pod", "canary pods"), b.State))
	}
	if c.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(agentName, c.Generation, st.ObservedGeneration, progress), nil
	}
	counts := fmt.Sprintf("canary %d/%d available, stable %d/%d available", st.CanaryAvailable, st.CanaryReplicas, st.StableAvailable, st.StableReplicas)
	if total > 0 && st.CurrentBatch > 0 {
		counts = fmt.Sprintf("batch %d of %d, %s", st.CurrentBatch, total, counts)
	}
	if st.Message != "" {
		counts += " (" + st.Message + ")"
	}
	var s RolloutStatus
	switch st.Phase {
	case v1alpha1.CanaryCompleted:
		s = status(StateComplete, counts, progress)
	case v1alpha1.CanaryPaused:
		s = status(StatePaused, counts, progress)
	case v1alpha1.CanaryDegraded:
		s = status(StateDegraded, counts, progress)
	case v1alpha1.CanaryRolledBack:
		s = status(StateDegraded, "rolled back; "+counts, progress)
	case v1alpha1.CanaryRollingBack:
		s = status(StateProgressing, "rolling back; "+counts, progress)
	default:
		s = status(StateProgressing, counts, progress)
	}
	if st.Phase != "" {
		s.Phase = string(st.Phase)
	}
	return s, nil
}

func deploymentStatus(obj *unstructured.Unstructured) (RolloutStatus, error) {
	var d appsv1.Deployment
	if err := fromUnstructured(obj, &d); err != nil {
		return RolloutStatus{}, err
	}
	return deploymentRollout(&d), nil
}

// deploymentRollout is a Deployment's rollout status, as kubectl rollout status reads it.
func deploymentRollout(d *appsv1.Deployment) RolloutStatus {
	st := d.Status
	if d.Generation > st.ObservedGeneration {
		return staleStatus(kcmName, d.Generation, st.ObservedGeneration, nil)
	}
	replicas := v1alpha1.ReplicasOrDefault(d.Spec.Replicas)
	counts := fmt.Sprintf("%d of %s updated, %d ready, %d available", st.UpdatedReplicas, plural(replicas, "replica", "replicas"), st.ReadyReplicas, st.AvailableReplicas)
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return status(StateDegraded, "exceeded its progress deadline; "+counts, nil)
		}
	}
	var waiting string
	switch {
	case st.UpdatedReplicas < replicas:
	case st.Replicas > st.UpdatedReplicas:
		waiting = fmt.Sprintf("; %s pending termination", plural(st.Replicas-st.UpdatedReplicas, "old replica", "old replicas"))
	case st.AvailableReplicas < st.UpdatedReplicas:
	default:
		return status(StateComplete, counts, nil)
	}
	if d.Spec.Paused {
		return status(StatePaused, "rollout paused; "+counts+waiting, nil)
	}
	return status(StateProgressing, counts+waiting, nil)
}

func statefulSetStatus(obj *unstructured.Unstructured) (RolloutStatus, error) {
	var s appsv1.StatefulSet
	if err := fromUnstructured(obj, &s); err != nil {
		return RolloutStatus{}, err
	}
	return statefulSetRollout(&s), nil
}

// statefulSetRollout is a StatefulSet's rollout status: partitions and OnDelete pause it.
func statefulSetRollout(s *appsv1.StatefulSet) RolloutStatus {
	st := s.Status
	if s.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(kcmName, s.Generation, st.ObservedGeneration, nil)
	}
	replicas := v1alpha1.ReplicasOrDefault(s.Spec.Replicas)
	var partition int32
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		partition = min(deref(ru.Partition, 0), replicas)
	}
	revision := ""
	if st.UpdateRevision != "" {
		revision = " (revision " + st.UpdateRevision + ")"
	}
	counts := fmt.Sprintf("%d of %s updated%s, %d ready", st.UpdatedReplicas, plural(replicas, "pod", "pods"), revision, st.ReadyReplicas)
	pending := st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision
	ready := st.ReadyReplicas >= replicas && st.Replicas == replicas
	switch {
	case !ready:
	case !pending:
		return status(StateComplete, counts, nil)
	case s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		return status(StatePaused, "OnDelete update strategy: pods are updated only when deleted; "+counts, nil)
	case partition > 0 && st.UpdatedReplicas >= replicas-partition:
		return status(StatePaused, fmt.Sprintf("held by partition %d (pods below it keep the old revision); %s", partition, counts), nil)
	}
	return status(StateProgressing, counts, nil)
}
