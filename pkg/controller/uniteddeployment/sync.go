package uniteddeployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

// defaultRevisionHistoryLimit applies when spec.revisionHistoryLimit is unset.
const defaultRevisionHistoryLimit = 10

// podCounts counts the active pods of a group.
type podCounts struct {
	replicas, ready, updated, updatedReady int32
}

func (p *podCounts) add(pod *corev1.Pod, updatedRevision string) {
	p.replicas++
	ready := podReady(pod)
	if ready {
		p.ready++
	}
	if pod.Labels[appsv1alpha1.LabelRevision] == updatedRevision {
		p.updated++
		if ready {
			p.updatedReady++
		}
	}
}

// observedPods holds the pod counts of a UnitedDeployment.
type observedPods struct {
	total    podCounts
	bySubset map[string]*podCounts
	// byOwner counts per subset and kind of the pods' direct owner.
	byOwner map[string]map[string]*podCounts
}

func (o *observedPods) subset(name string) podCounts {
	if c := o.bySubset[name]; c != nil {
		return *c
	}
	return podCounts{}
}

func (o *observedPods) owner(subset, ownerKind string) podCounts {
	if c := o.byOwner[subset][ownerKind]; c != nil {
		return *c
	}
	return podCounts{}
}

func countPods(pods []*corev1.Pod, updatedRevision string) *observedPods {
	o := &observedPods{bySubset: map[string]*podCounts{}, byOwner: map[string]map[string]*podCounts{}}
	for _, p := range pods {
		if !podActive(p) {
			continue
		}
		s := p.Labels[appsv1alpha1.LabelSubsetName]
		o.total.add(p, updatedRevision)
		if o.bySubset[s] == nil {
			o.bySubset[s] = &podCounts{}
			o.byOwner[s] = map[string]*podCounts{}
		}
		o.bySubset[s].add(p, updatedRevision)
		ownerKind := ""
		if ref := metav1.GetControllerOf(p); ref != nil {
			ownerKind = ref.Kind
		}
		if o.byOwner[s][ownerKind] == nil {
			o.byOwner[s][ownerKind] = &podCounts{}
		}
		o.byOwner[s][ownerKind].add(p, updatedRevision)
	}
	return o
}

// failure is one thing that went wrong in a sync, for the SubsetFailure condition.
type failure struct {
	reason, message string
}

// syncState collects what one sync did.
type syncState struct {
	failures []failure
	errs     []error
	// provisionFailed is set when a create or delete failed.
	provisionFailed bool
	// notUpdated lists, per reason, the subsets whose workload does not carry the updated
	// revision after this sync.
	notUpdated map[string][]string
	// waiting lists workloads of a previous kind kept until their replacement is ready.
	waiting []string
}

func (s *syncState) fail(reason string, err error) {
	s.failures = append(s.failures, failure{reason, err.Error()})
	s.errs = append(s.errs, err)
}

func (s *syncState) hold(reason, subset string) {
	if s.notUpdated == nil {
		s.notUpdated = map[string][]string{}
	}
	s.notUpdated[reason] = append(s.notUpdated[reason], subset)
}

// deletion is a workload the sync deletes, and why.
type deletion struct {
	adapter Adapter
	subset  *Subset
	why     string
}

// othersWorkload is a workload of a kind the template no longer asks for.
type othersWorkload struct {
	adapter Adapter
	subset  *Subset
}

// partitionOf is the partition of a subset: absent means 0, capped at the subset's replicas.
func partitionOf(ud *appsv1alpha1.UnitedDeployment, subset string, replicas int32) int32 {
	mu := ud.Spec.UpdateStrategy.ManualUpdate
	if mu == nil {
		return 0
	}
	p, ok := mu.Partitions[subset]
	if !ok || p < 0 {
		return 0
	}
	return min(p, replicas)
}

// labelSelectorString is the pods' selector for the scale subresource.
func labelSelectorString(ud *appsv1alpha1.UnitedDeployment) string {
	if ud.Spec.Selector == nil {
		return ""
	}
	sel, err := metav1.LabelSelectorAsSelector(ud.Spec.Selector)
	if err != nil {
		return ""
	}
	return sel.String()
}

// revisionData is what a revision holds: a patch that restores spec.template.
func revisionData(ud *appsv1alpha1.UnitedDeployment) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"template": ud.Spec.Template}})
}

// syncRevisions finds or creates the revision of the current spec.template (the updated
// revision) and finds the current revision. The collision count returned may have grown and
// must be written to the status even when err is not nil.
func (c *Controller) syncRevisions(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, revisions []*appsv1.ControllerRevision) (current, updated *appsv1.ControllerRevision, collisionCount int32, err error) {
	if ud.Status.CollisionCount != nil {
		collisionCount = *ud.Status.CollisionCount
	}
	data, err := revisionData(ud)
	if err != nil {
		return nil, nil, collisionCount, err
	}
	revision.Sort(revisions)
	labels := map[string]string{appsv1alpha1.LabelUnitedDeploymentName: ud.Name}
	candidate := revision.New(ud, controllerKind, labels, data, revision.Next(revisions), &collisionCount)
	updated, err = c.history.Apply(ctx, ud, revision.PlanUpdate(revisions, candidate), &collisionCount)
	if err != nil {
		return nil, nil, collisionCount, fmt.Errorf("revision of spec.template: %w", err)
	}
	current = revision.Find(revisions, ud.Status.CurrentRevision)
	if current == nil || ud.Status.CurrentRevision == updated.Name {
		current = updated
	}
	return current, updated, collisionCount, nil
}

// sync reconciles one UnitedDeployment whose expectations are satisfied.
func (c *Controller) sync(ctx context.Context, key string, ud *appsv1alpha1.UnitedDeployment) error {
	logger := klog.FromContext(ctx).WithValues("unitedDeployment", key)
	total := appsv1alpha1.ReplicasOrDefault(ud.Spec.Replicas)
	status := ud.Status.DeepCopy()
	status.ObservedGeneration = ud.Generation
	status.LabelSelector = labelSelectorString(ud)
	st := &syncState{}

	// Observe the subset workloads of every kind.
	var selected Adapter
	own := map[string][]*Subset{}
	var others []othersWorkload
	for _, a := range c.adapters {
		list, err := a.List(ud)
		if err != nil {
			return err
		}
		if selected == nil && a.Selected(ud) {
			selected = a
			for _, s := range list {
				own[s.SubsetName] = append(own[s.SubsetName], s)
			}
			continue
		}
		for _, s := range list {
			others = append(others, othersWorkload{a, s})
		}
	}
	for _, l := range own {
		sortSubsets(l)
	}
	sort.SliceStable(others, func(i, j int) bool {
		a, b := others[i], others[j]
		if a.adapter.Kind() != b.adapter.Kind() {
			return a.adapter.Kind() < b.adapter.Kind()
		}
		return a.subset.Object.GetName() < b.subset.Object.GetName()
	})
	revisions, err := c.listRevisions(ud)
	if err != nil {
		return err
	}
	pods, err := c.podLister.Pods(ud.Namespace).List(ownedSelector(ud))
	if err != nil {
		return err
	}

	if selected == nil {
		// The CRD refuses such a template; report it rather than guess.
		st.failures = append(st.failures, failure{appsv1alpha1.ReasonNoTemplate, "spec.template sets none of statefulSetTemplate, deploymentTemplate and tappTemplate"})
		c.fillCounts(ud, status, countPods(pods, status.UpdatedRevision), nil, nil)
		c.setFailureCondition(ud, status, st)
		return c.updateStatus(ctx, ud, status)
	}

	current := map[string]int32{}
	for name, l := range own {
		current[name] = l[0].Replicas
	}
	alloc, err := Allocate(total, ud.Spec.Topology.Subsets, current)
	if err != nil {
		// Change nothing: report, and wait for the user to fix the spec.
		st.failures = append(st.failures, failure{appsv1alpha1.ReasonInvalidReplicas, err.Error()})
		c.fillCounts(ud, status, countPods(pods, status.UpdatedRevision), current, nil)
		c.setFailureCondition(ud, status, st)
		return c.updateStatus(ctx, ud, status)
	}

	currentRev, updatedRev, collisionCount, err := c.syncRevisions(ctx, ud, revisions)
	if collisionCount != 0 || status.CollisionCount != nil {
		status.CollisionCount = &collisionCount
	}
	if err != nil {
		st.fail(appsv1alpha1.ReasonRevisionFailed, err)
		c.setFailureCondition(ud, status, st)
		if uerr := c.updateStatus(ctx, ud, status); uerr != nil {
			logger.Error(uerr, "Updating status")
		}
		return err
	}
	status.UpdatedRevision = updatedRev.Name
	status.CurrentRevision = currentRev.Name
	observed := countPods(pods, updatedRev.Name)

	// What each listed subset should be.
	subsets := ud.Spec.Topology.Subsets
	specs := make(map[string]*SubsetSpec, len(subsets))
	for i := range subsets {
		s := &subsets[i]
		specs[s.Name] = &SubsetSpec{
			Subset:     s,
			Replicas:   alloc[s.Name],
			Partition:  partitionOf(ud, s.Name, alloc[s.Name]),
			Paused:     ud.Spec.UpdateStrategy.Paused,
			Revision:   updatedRev.Name,
			SubsetHash: subsetHash(s),
		}
	}

	// Plan creations and deletions.
	var creates []*SubsetSpec
	var deletes []deletion
	kept := map[string]*Subset{}
	for i := range subsets {
		name := subsets[i].Name
		l := own[name]
		if len(l) == 0 {
			creates = append(creates, specs[name])
			continue
		}
		kept[name] = l[0]
		for _, dup := range l[1:] {
			deletes = append(deletes, deletion{selected, dup, fmt.Sprintf("duplicate of %s %s of subset %s", selected.Kind(), l[0].Object.GetName(), name)})
		}
	}
	var unlisted []string
	for name := range own {
		if specs[name] == nil {
			unlisted = append(unlisted, name)
		}
	}
	sort.Strings(unlisted)
	for _, name := range unlisted {
		for _, s := range own[name] {
			deletes = append(deletes, deletion{selected, s, fmt.Sprintf("subset %q is no longer listed", name)})
		}
	}
	for _, o := range others {
		name := o.subset.SubsetName
		spec := specs[name]
		switch {
		case spec == nil:
			deletes = append(deletes, deletion{o.adapter, o.subset, fmt.Sprintf("subset %q is no longer listed", name)})
		case kept[name] != nil && observed.owner(name, selected.PodOwnerKind()).updatedReady >= spec.Replicas:
			deletes = append(deletes, deletion{o.adapter, o.subset, fmt.Sprintf("replaced by %s %s", selected.Kind(), kept[name].Object.GetName())})
		default:
			// Keep serving until the new kind's workload of the subset is ready.
			st.waiting = append(st.waiting, fmt.Sprintf("%s %s (subset %s)", o.adapter.Kind(), o.subset.Object.GetName(), name))
		}
	}

	if len(creates)+len(deletes) > 0 {
		c.expectations.SetExpectations(key, len(creates), len(deletes))
	}

	for _, spec := range creates {
		obj, err := selected.Create(ctx, ud, spec)
		if err != nil {
			c.expectations.CreationObserved(key)
			st.provisionFailed = true
			err = fmt.Errorf("creating %s of subset %s: %w", selected.Kind(), spec.Subset.Name, err)
			st.fail(appsv1alpha1.ReasonFailedCreate, err)
			c.recorder.Event(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedCreate, err.Error())
			continue
		}
		c.recorder.Eventf(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulCreate, "Created %s %s for subset %s with %d replicas at revision %s",
			selected.Kind(), obj.GetName(), spec.Subset.Name, spec.Replicas, spec.Revision)
	}

	for i := range subsets {
		name := subsets[i].Name
		w := kept[name]
		if w == nil {
			continue
		}
		spec := specs[name]
		templateChanged := w.Revision != spec.Revision || w.SubsetHash != spec.SubsetHash
		spec.ApplyTemplate = templateChanged
		if templateChanged && spec.Paused {
			spec.ApplyTemplate = false
			st.hold(appsv1alpha1.ReasonPaused, name)
		}
		if selected.Kind() == "Deployment" && spec.Partition > 0 && spec.ApplyTemplate {
			spec.ApplyTemplate = false
			st.hold(appsv1alpha1.ReasonPartitionUnsupported, name)
		}
		changed, err := selected.Update(ctx, ud, w, spec)
		if err != nil {
			err = fmt.Errorf("updating %s %s of subset %s: %w", selected.Kind(), w.Object.GetName(), name, err)
			st.fail(appsv1alpha1.ReasonFailedUpdate, err)
			if spec.ApplyTemplate {
				st.hold(appsv1alpha1.ReasonUpdating, name)
			}
			c.recorder.Event(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedUpdate, err.Error())
			continue
		}
		if changed {
			msg := fmt.Sprintf("Updated %s %s of subset %s: %d replicas, partition %d", selected.Kind(), w.Object.GetName(), name, spec.Replicas, spec.Partition)
			if spec.ApplyTemplate {
				msg += ", revision " + spec.Revision
			}
			if spec.Paused {
				msg += ", paused"
			}
			c.recorder.Event(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulUpdate, msg)
		}
	}
	if selected.Kind() == "Deployment" {
		for i := range subsets {
			if spec := specs[subsets[i].Name]; spec.Partition > 0 {
				st.failures = append(st.failures, failure{appsv1alpha1.ReasonPartitionUnsupported, fmt.Sprintf(
					"subset %s runs a Deployment, which cannot keep part of its pods on an old revision: partition %d refused and the subset's template held; set its partition to 0 and use updateStrategy.paused to hold a rollout",
					spec.Subset.Name, spec.Partition)})
			}
		}
	}

	for _, d := range deletes {
		if err := d.adapter.Delete(ctx, d.subset); err != nil {
			c.expectations.DeletionObserved(key)
			st.provisionFailed = true
			err = fmt.Errorf("deleting %s %s: %w", d.adapter.Kind(), d.subset.Object.GetName(), err)
			st.fail(appsv1alpha1.ReasonFailedDelete, err)
			c.recorder.Event(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete, err.Error())
			continue
		}
		c.recorder.Eventf(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulDelete, "Deleted %s %s: %s", d.adapter.Kind(), d.subset.Object.GetName(), d.why)
	}

	// The updated revision becomes current once every pod runs it and is ready, and nothing of
	// an older template is left.
	if status.CurrentRevision != status.UpdatedRevision && len(st.notUpdated) == 0 && len(st.waiting) == 0 &&
		!st.provisionFailed && len(creates) == 0 &&
		observed.total.replicas == total && observed.total.updated == total && observed.total.updatedReady == total {
		status.CurrentRevision = status.UpdatedRevision
		c.recorder.Eventf(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonRolloutComplete, "Every replica runs revision %s and is ready; it is now the current revision", status.UpdatedRevision)
	}

	c.truncateHistory(ctx, ud, status, revisions, updatedRev, own, others, st)

	c.fillCounts(ud, status, observed, alloc, specs)
	c.setConditions(ud, status, selected, st)
	c.setFailureCondition(ud, status, st)
	metrics.SetRolloutProgress(kind, ud.Namespace, ud.Name, total, status.UpdatedReplicas, status.ReadyReplicas)
	if err := c.updateStatus(ctx, ud, status); err != nil {
		st.errs = append(st.errs, fmt.Errorf("updating status: %w", err))
	}
	return errors.Join(st.errs...)
}

// truncateHistory deletes the oldest revisions beyond spec.revisionHistoryLimit, never the
// current or updated revision nor one a subset workload still carries.
func (c *Controller) truncateHistory(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus,
	revisions []*appsv1.ControllerRevision, updated *appsv1.ControllerRevision, own map[string][]*Subset, others []othersWorkload, st *syncState) {
	live := sets.New(status.CurrentRevision, status.UpdatedRevision, ud.Status.CurrentRevision, updated.Name)
	for _, l := range own {
		for _, s := range l {
			live.Insert(s.Revision)
		}
	}
	for _, o := range others {
		live.Insert(o.subset.Revision)
	}
	limit := defaultRevisionHistoryLimit
	if ud.Spec.RevisionHistoryLimit != nil {
		limit = int(*ud.Spec.RevisionHistoryLimit)
	}
	for _, r := range revision.Excess(revisions, live, limit) {
		if err := c.history.Delete(ctx, r); err != nil {
			st.errs = append(st.errs, fmt.Errorf("deleting old revision %s: %w", r.Name, err))
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted old revision", "unitedDeployment", klog.KObj(ud), "revision", r.Name)
	}
}

// fillCounts writes the totals and subset statuses. alloc holds each subset's replicas (nil: 0)
// and specs the partitions (nil: taken from the capped spec).
func (c *Controller) fillCounts(ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus, observed *observedPods, alloc map[string]int32, specs map[string]*SubsetSpec) {
	status.Replicas = observed.total.replicas
	status.ReadyReplicas = observed.total.ready
	status.UpdatedReplicas = observed.total.updated
	status.UpdatedReadyReplicas = observed.total.updatedReady
	status.SubsetStatuses = nil
	for i := range ud.Spec.Topology.Subsets {
		name := ud.Spec.Topology.Subsets[i].Name
		counts := observed.subset(name)
		ss := appsv1alpha1.SubsetStatus{
			Name:            name,
			Replicas:        alloc[name],
			ReadyReplicas:   counts.ready,
			UpdatedReplicas: counts.updated,
		}
		if spec := specs[name]; spec != nil {
			ss.Partition = spec.Partition
		} else {
			ss.Partition = partitionOf(ud, name, alloc[name])
		}
		status.SubsetStatuses = append(status.SubsetStatuses, ss)
	}
}

// setCondition sets a condition, stamped with the generation it describes.
func setCondition(ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus, t string, s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: ud.Generation,
	})
}

// setConditions sets SubsetProvisioned and SubsetUpdated after a sync that got as far as
// provisioning.
func (c *Controller) setConditions(ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus, selected Adapter, st *syncState) {
	switch {
	case st.provisionFailed:
		var msgs []string
		for _, f := range st.failures {
			if f.reason == appsv1alpha1.ReasonFailedCreate || f.reason == appsv1alpha1.ReasonFailedDelete {
				msgs = append(msgs, f.message)
			}
		}
		setCondition(ud, status, appsv1alpha1.SubsetProvisioned, metav1.ConditionFalse, appsv1alpha1.ReasonProvisionFailed, strings.Join(msgs, "; "))
	case len(st.waiting) > 0:
		setCondition(ud, status, appsv1alpha1.SubsetProvisioned, metav1.ConditionFalse, appsv1alpha1.ReasonReplacing,
			fmt.Sprintf("keeping %s until the subset's new %s is ready", strings.Join(st.waiting, ", "), selected.Kind()))
	default:
		setCondition(ud, status, appsv1alpha1.SubsetProvisioned, metav1.ConditionTrue, appsv1alpha1.ReasonProvisioned,
			fmt.Sprintf("every subset has one %s", selected.Kind()))
	}

	if len(st.notUpdated) == 0 {
		setCondition(ud, status, appsv1alpha1.SubsetUpdated, metav1.ConditionTrue, appsv1alpha1.ReasonUpdated,
			fmt.Sprintf("every subset's %s carries revision %s", selected.Kind(), status.UpdatedRevision))
		return
	}
	reasons := make([]string, 0, len(st.notUpdated))
	for r := range st.notUpdated {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	var msgs []string
	for _, r := range reasons {
		var why string
		switch r {
		case appsv1alpha1.ReasonPaused:
			why = "updateStrategy.paused is set"
		case appsv1alpha1.ReasonPartitionUnsupported:
			why = "a Deployment cannot honour a non-zero partition"
		default:
			why = "the update failed"
		}
		msgs = append(msgs, fmt.Sprintf("subsets %s keep their template: %s", strings.Join(st.notUpdated[r], ", "), why))
	}
	setCondition(ud, status, appsv1alpha1.SubsetUpdated, metav1.ConditionFalse, reasons[0], strings.Join(msgs, "; "))
}

// setFailureCondition sets SubsetFailure from the sync's failures, and emits a Warning Event
// for failures that are the user's to fix when they first appear (API failures already had
// their own Event).
func (c *Controller) setFailureCondition(ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus, st *syncState) {
	if len(st.failures) == 0 {
		setCondition(ud, status, appsv1alpha1.SubsetFailure, metav1.ConditionFalse, appsv1alpha1.ReasonNoFailure, "")
		return
	}
	msgs := make([]string, 0, len(st.failures))
	for _, f := range st.failures {
		msgs = append(msgs, f.message)
	}
	reason, message := st.failures[0].reason, strings.Join(msgs, "; ")
	old := meta.FindStatusCondition(ud.Status.Conditions, appsv1alpha1.SubsetFailure)
	fresh := old == nil || old.Status != metav1.ConditionTrue || old.Reason != reason || old.Message != message
	if fresh {
		for _, f := range st.failures {
			switch f.reason {
			case appsv1alpha1.ReasonInvalidReplicas, appsv1alpha1.ReasonPartitionUnsupported, appsv1alpha1.ReasonNoTemplate:
				c.recorder.Event(ud, corev1.EventTypeWarning, f.reason, f.message)
			}
		}
	}
	setCondition(ud, status, appsv1alpha1.SubsetFailure, metav1.ConditionTrue, reason, message)
}

// updateStatus writes status when it differs from ud's.
func (c *Controller) updateStatus(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, status *appsv1alpha1.UnitedDeploymentStatus) error {
	if apiequality.Semantic.DeepEqual(&ud.Status, status) {
		return nil
	}
	u := ud.DeepCopy()
	u.Status = *status
	_, err := c.client.AppsV1alpha1().UnitedDeployments(ud.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}
