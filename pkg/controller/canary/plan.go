package canary

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// StableSnapshot is the stable Deployment as it was when a release began, kept in the Canary's
// v1alpha1.AnnotationStableSnapshot.
type StableSnapshot struct {
	// Deployment is the name of the stable Deployment the snapshot was taken of.
	Deployment string `json:"deployment"`
	// Replicas is the stable Deployment's spec.replicas when the release began.
	Replicas int32 `json:"replicas"`
	// Template is the stable Deployment's pod template when the release began.
	Template corev1.PodTemplateSpec `json:"template"`
}

// reconciler is the plan of one sync of one Canary: a pure function of what the sync observed
// (computePlan). It decides the batch state (status), the Deployment writes and the Events.
type reconciler struct {
	obs *observed
	now metav1.Time

	canary *v1alpha1.Canary      // the observed Canary; only its annotations change
	status v1alpha1.CanaryStatus // the batch state being computed

	steps     []step
	stable    *appsv1.Deployment // as it will be after the writes; nil when it does not exist
	canaryDep *appsv1.Deployment // as it will be after the writes; nil when there is none

	phase      v1alpha1.CanaryPhase
	reason     string // reason of the Progressing (or Degraded) condition
	message    string
	degraded   bool
	canaryNew  bool // the canary Deployment is created in this sync: its status says nothing yet
	stableRest bool // the stable Deployment is written in this sync: wait to see its status

	// newSnapshot is the v1alpha1.AnnotationStableSnapshot to record on the Canary before any
	// Deployment is written ("" when it is there already).
	newSnapshot string
	// writes are the Deployment writes decided, in order.
	writes []deploymentWrite
	// events are the Events of the decisions, sent once the sync's status is committed.
	events []event
}

// step is one step of a release: the canary pods it holds and what it waits for once they are
// all available. Today's spec.batches, spec.batchSizes and spec.pauseType are written as steps
// (stepsOf); a step list in the spec, timed pauses and analysis (issue 12) add fields here and
// states to the batch state machine, not another plan.
type step struct {
	canaryReplicas int32
	// pause: the release waits for a promotion (spec.approvedBatch at least the step's number).
	pause bool
}

// stepsOf is the release spec describes: the batch plan, each batch pausing as pauseType says
// (First: after batch 1; All: after every batch but the last; None: never).
func stepsOf(spec *v1alpha1.CanarySpec) ([]step, error) {
	plan, err := v1alpha1.CanaryBatchPlan(spec)
	if err != nil {
		return nil, err
	}
	steps := make([]step, len(plan))
	for i, size := range plan {
		last := i == len(plan)-1
		steps[i] = step{canaryReplicas: size}
		switch spec.PauseType {
		case v1alpha1.PauseAll:
			steps[i].pause = !last
		case v1alpha1.PauseNone:
		default: // First, the default
			steps[i].pause = i == 0 && !last
		}
	}
	return steps, nil
}

// event is one Event to record on the Canary.
type event struct{ eventType, reason, message string }

// writeKind says what a deploymentWrite does.
type writeKind int

const (
	createCanary writeKind = iota
	updateCanary
	scaleCanary
	scaleStable
	restoreStable
)

// deploymentWrite is one decided Deployment write: the object to create or update, or the patch
// of a scale or restore, and the replicas before and after (for its Event).
type deploymentWrite struct {
	kind     writeKind
	object   *appsv1.Deployment
	patch    []byte
	from, to int32
}

// computePlan decides, from what a sync observed, the batch state, the outcome and the writes.
func computePlan(obs *observed, now metav1.Time) *reconciler {
	r := &reconciler{obs: obs, now: now, canary: obs.canary, status: *obs.canary.Status.DeepCopy()}
	r.reconcile()
	return r
}

// reconcile decides the writes for the Canary (r.writes) and the outcome (r.status, r.phase,
// r.message), or why nothing can be done.
func (r *reconciler) reconcile() {
	cn := r.canary
	steps, err := stepsOf(&cn.Spec)
	if err != nil {
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("invalid batch plan: %v", err))
		return
	}
	r.steps = steps

	if r.obs.stable == nil {
		if d := r.obs.canaryDep; d != nil && isOwnedBy(d, cn) {
			r.canaryDep = d
		}
		r.setDegraded(v1alpha1.ReasonStableNotFound, fmt.Sprintf(
			"stable Deployment %q not found in namespace %q: nothing is changed until it exists",
			cn.Spec.StableRef.Name, cn.Namespace))
		return
	}
	r.stable = r.obs.stable

	if d := r.obs.canaryDep; d != nil && !isOwnedBy(d, cn) {
		r.setDegraded(v1alpha1.ReasonCanaryNameConflict, fmt.Sprintf(
			"Deployment %q already exists and is not owned by this Canary: choose another spec.canary.name or delete that Deployment; nothing is changed until then",
			cn.Spec.Canary.Name))
		return
	}
	r.canaryDep = r.obs.canaryDep
	if r.degradedSpec() {
		return
	}
	if cn.Spec.Rollback {
		r.rollback()
		return
	}
	r.progress()
}

// degradedSpec records, and reports, a spec the canary Deployment cannot be made from.
func (r *reconciler) degradedSpec() bool {
	cn := r.canary

	if len(cn.Spec.Canary.Template.Labels) == 0 {
		r.setDegraded(v1alpha1.ReasonInvalidSpec,
			"spec.canary.template.metadata.labels is empty: the labels are the canary Deployment's selector")
		return true
	}
	if r.canaryDep != nil && !templateLabelsSelected(r.canaryDep.Spec.Selector, &cn.Spec.Canary.Template) {
		r.setDegraded(v1alpha1.ReasonSelectorMismatch, fmt.Sprintf(
			"the labels of spec.canary.template no longer match the selector of Deployment %q, which cannot change: restore the labels, or delete that Deployment to have it created again",
			cn.Spec.Canary.Name))
		return true
	}
	return false
}

// setDegraded records that the controller cannot act on the Canary and why. Nothing is written
// to any Deployment.
func (r *reconciler) setDegraded(reason, message string) {
	if r.status.Phase != v1alpha1.CanaryDegraded || r.status.Message != message {
		r.event(corev1.EventTypeWarning, reason, "%s", message)
	}
	r.degraded = true
	r.phase = v1alpha1.CanaryDegraded
	r.reason = reason
	r.message = message
}

// progress moves the release forward: it advances the batch state machine as far as the
// Deployments allow, then scales them to the current batch.
func (r *reconciler) progress() {
	cn := r.canary
	st := &r.status
	n := int32(len(r.steps))

	if wasRollingBack(st) {
		st.CurrentBatch = 0
		st.Batches = nil
		r.event(corev1.EventTypeNormal, v1alpha1.EventRestarted, "spec.rollback cleared: the release starts again from batch 1")
	}
	r.alignBatches()
	if st.CurrentBatch > n {
		st.CurrentBatch = n
	}

	if cn.Spec.Paused && !r.completed() {
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonPausedBySpec
		if st.CurrentBatch == 0 {
			r.message = "paused by spec.paused before batch 1"
			return
		}
		r.scale(replicasOf(r.canaryDep), true)
		k := st.CurrentBatch
		r.message = fmt.Sprintf("paused by spec.paused at batch %d/%d: %d of %d canary pods available, stable at %d",
			k, n, r.canaryAvailable(), replicasOf(r.canaryDep), replicasOf(r.stable))
		return
	}

	if st.CurrentBatch == 0 {
		r.ensureSnapshot()
		r.startBatch(1)
	}
	r.advance()

	k := st.CurrentBatch
	target := r.steps[k-1].canaryReplicas
	r.scale(target, false)
	r.describeProgress(k, target)
}

// advance moves the batch state machine as far as the observed Deployments allow.
func (r *reconciler) advance() {
	st := &r.status
	n := int32(len(r.steps))
	for {
		k := st.CurrentBatch
		b := &st.Batches[k-1]
		next := false
		switch b.State {
		case v1alpha1.BatchPending:
			r.startBatch(k)
			continue
		case v1alpha1.BatchUpgrading:
			next = r.finishBatch(k, b)
		case v1alpha1.BatchPaused:
			if r.canary.Spec.ApprovedBatch < k {
				break
			}
			b.State = v1alpha1.BatchCompleted
			r.event(corev1.EventTypeNormal, v1alpha1.EventPromoted, "batch %d/%d promoted (spec.approvedBatch=%d)", k, n, r.canary.Spec.ApprovedBatch)
			next = true
		case v1alpha1.BatchCompleted:
			next = true
		}
		if !next || k >= n {
			return
		}
		r.startBatch(k + 1)
	}
}

// finishBatch ends the upgrading batch k once it is done: paused for promotion or completed. It
// reports whether the next batch may start.
func (r *reconciler) finishBatch(k int32, b *v1alpha1.CanaryBatchStatus) bool {
	n := int32(len(r.steps))
	if !r.batchDone(k) {
		return false
	}
	b.FinishTime = r.now.DeepCopy()
	if r.needsPause(k) {
		b.State = v1alpha1.BatchPaused
		r.event(corev1.EventTypeNormal, v1alpha1.EventBatchPaused,
			"batch %d/%d complete with %d canary pods: waiting for promotion (spec.approvedBatch >= %d)", k, n, r.steps[k-1].canaryReplicas, k)
		return false
	}
	b.State = v1alpha1.BatchCompleted
	r.event(corev1.EventTypeNormal, v1alpha1.EventBatchCompleted, "batch %d/%d complete with %d canary pods", k, n, r.steps[k-1].canaryReplicas)
	return true
}

// describeProgress sets the phase, reason and message of a release at batch k of target pods.
func (r *reconciler) describeProgress(k, target int32) {
	n := int32(len(r.steps))
	switch b := r.status.Batches[k-1]; {
	case b.State == v1alpha1.BatchPaused:
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonWaitingForPromotion
		r.message = fmt.Sprintf("batch %d/%d complete with %d canary pods: waiting for promotion (kubectl workload promote, or spec.approvedBatch=%d)",
			k, n, target, k)
	case b.State == v1alpha1.BatchCompleted && k == n && !stableGone(r.stable):
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
		r.message = fmt.Sprintf("all %d batches complete: %d of %d canary pods available, waiting for the last %d stable pods to go",
			n, r.canaryAvailable(), target, max(podsOf(r.stable), 1))
	case b.State == v1alpha1.BatchCompleted && k == n:
		if r.status.Phase != v1alpha1.CanaryCompleted {
			r.event(corev1.EventTypeNormal, v1alpha1.EventReleaseComplete, "all %d batches complete: the canary serves %d pods, no stable pod is left", n, target)
		}
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonCompleted
		r.message = fmt.Sprintf("all %d batches complete: %d of %d canary pods available, stable at %d",
			n, r.canaryAvailable(), target, replicasOf(r.stable))
	default:
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
		r.message = fmt.Sprintf("batch %d/%d: %d of %d canary pods available, stable at %d",
			k, n, r.canaryAvailable(), target, replicasOf(r.stable))
	}
}

// wasRollingBack reports whether the last sync was rolling back or had rolled back: by its phase,
// or, when a refused write made the phase Degraded, by its Progressing condition, which keeps
// what the release was doing.
func wasRollingBack(st *v1alpha1.CanaryStatus) bool {
	phase := st.Phase
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); phase == v1alpha1.CanaryDegraded && c != nil {
		phase = v1alpha1.CanaryPhase(c.Reason) // the reasons RollingBack and RolledBack are the phases'
	}
	return phase == v1alpha1.CanaryRollingBack || phase == v1alpha1.CanaryRolledBack
}

// completed reports whether every batch of the plan has completed.
func (r *reconciler) completed() bool {
	n := int32(len(r.steps))
	return r.status.CurrentBatch == n && r.status.Batches[n-1].State == v1alpha1.BatchCompleted
}

// alignBatches makes status.batches describe the plan: one entry per batch, in order, keeping
// the state and times already recorded.
func (r *reconciler) alignBatches() {
	old := map[int32]v1alpha1.CanaryBatchStatus{}
	for _, b := range r.status.Batches {
		old[b.Index] = b
	}
	batches := make([]v1alpha1.CanaryBatchStatus, len(r.steps))
	for i, st := range r.steps {
		size := st.canaryReplicas
		b, ok := old[int32(i+1)]
		if !ok {
			b = v1alpha1.CanaryBatchStatus{Index: int32(i + 1), State: v1alpha1.BatchPending}
		}
		b.CanaryReplicas = size
		batches[i] = b
	}
	r.status.Batches = batches
}

func (r *reconciler) startBatch(k int32) {
	st := &r.status
	for i := range st.Batches {
		if st.Batches[i].Index < k && st.Batches[i].State != v1alpha1.BatchCompleted {
			st.Batches[i].State = v1alpha1.BatchCompleted
		}
	}
	st.CurrentBatch = k
	b := &st.Batches[k-1]
	b.State = v1alpha1.BatchUpgrading
	b.StartTime = r.now.DeepCopy()
	b.FinishTime = nil
	r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted, "batch %d/%d started: %d canary pods", k, len(r.steps), r.steps[k-1].canaryReplicas)
}

// needsPause reports whether the release waits for promotion after batch k.
func (r *reconciler) needsPause(k int32) bool {
	return r.steps[k-1].pause && r.canary.Spec.ApprovedBatch < k
}

// batchDone reports whether batch k is complete: the canary Deployment runs exactly the batch's
// pods, from the current template, all of them available.
func (r *reconciler) batchDone(k int32) bool {
	d := r.canaryDep
	if d == nil || r.canaryNew {
		return false
	}
	target := r.steps[k-1].canaryReplicas
	return statusObserved(d) &&
		replicasOf(d) == target &&
		d.Annotations[v1alpha1.AnnotationTemplateHash] == r.templateHash() &&
		d.Spec.MinReadySeconds == r.canary.Spec.MinReadySeconds &&
		d.Status.Replicas == target &&
		d.Status.UpdatedReplicas == target &&
		d.Status.AvailableReplicas >= target
}

// canaryAvailable is the number of available canary pods.
func (r *reconciler) canaryAvailable() int32 {
	if r.canaryDep == nil || r.canaryNew {
		return 0
	}
	return r.canaryDep.Status.AvailableReplicas
}

// scale brings the Deployments towards target canary pods without letting available capacity
// drop below spec.replicas:
//   - the canary Deployment is created, or its template updated, and scaled up to target;
//   - the stable Deployment is set to replicas − (available canary pods, at most target): it
//     shrinks only as canary pods become available and grows back if they stop being available;
//   - the canary Deployment is scaled down to target only once the stable Deployment has
//     replicas − target pods available on its current template.
//
// With hold (spec.paused) the canary Deployment is left as it is and the stable Deployment may
// only grow.
func (r *reconciler) scale(target int32, hold bool) {
	replicas := r.canary.Spec.Replicas

	// The canary's availability is trusted only while its status describes its spec, template
	// and minReadySeconds; until then the stable Deployment may grow but not shrink. A scale-up
	// does not make the available pods any less available.
	observed := r.canaryDep
	trusted := observed == nil || statusObserved(observed)
	if observed == nil {
		if !hold {
			r.createCanary(target)
		}
	} else if !hold && r.updateCanaryTemplate() {
		trusted = false
	}
	canaryReplicas := replicasOf(r.canaryDep)
	if r.canaryDep != nil && !r.canaryNew && !hold && canaryReplicas < target {
		r.scaleCanary(target)
	}

	stableTarget := max(0, replicas-min(r.canaryAvailable(), target))
	if (hold || !trusted) && stableTarget < replicasOf(r.stable) {
		stableTarget = replicasOf(r.stable)
	}
	if stableTarget != replicasOf(r.stable) {
		r.scaleStable(stableTarget)
	}

	if r.canaryDep != nil && !hold && canaryReplicas > target && r.stableReady(replicas-target) {
		r.scaleCanary(target)
	}
}

// podsOf is how many pods a Deployment may still run: its spec, or more while pods it scaled
// away have not gone yet (its status, terminating pods included).
func podsOf(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return max(replicasOf(d), d.Status.Replicas+ptr.Deref(d.Status.TerminatingReplicas, 0))
}

// stableGone reports whether the stable Deployment runs no pod, as the Deployment controller
// last reported it for its current spec.
func stableGone(d *appsv1.Deployment) bool {
	return replicasOf(d) == 0 && statusObserved(d) && podsOf(d) == 0
}

// stableReady reports whether the stable Deployment, as last observed, has at least want pods
// available and no rollout of its own template under way, so that canary pods may go.
func (r *reconciler) stableReady(want int32) bool {
	s := r.stable
	return !r.stableRest &&
		statusObserved(s) &&
		replicasOf(s) >= want &&
		s.Status.AvailableReplicas >= want &&
		s.Status.UpdatedReplicas == s.Status.Replicas
}

// rollback returns all capacity to the stable Deployment: first the stable template is restored
// from the snapshot if it changed and the stable Deployment scaled to spec.replicas; once that
// many stable pods are available, the canary Deployment is scaled to 0.
func (r *reconciler) rollback() {
	cn := r.canary
	st := &r.status
	replicas := cn.Spec.Replicas
	if !wasRollingBack(st) {
		r.event(corev1.EventTypeNormal, v1alpha1.EventRollingBack,
			"rollback requested at batch %d: scaling stable %q back to %d before the canary goes", st.CurrentBatch, cn.Spec.StableRef.Name, replicas)
	}

	snap, err := r.snapshot()
	if err != nil || snap == nil || snap.Deployment != r.stable.Name {
		if !wasRollingBack(st) {
			r.event(corev1.EventTypeWarning, v1alpha1.EventSnapshotMissing,
				"no usable %s annotation (%v): the stable pod template is kept as it is", v1alpha1.AnnotationStableSnapshot, err)
		}
		snap = nil
	}
	restored := snap == nil || equality.Semantic.DeepEqual(snap.Template, r.stable.Spec.Template)
	switch {
	case !restored:
		r.restoreStable(snap, replicas)
	case replicasOf(r.stable) != replicas:
		r.scaleStable(replicas)
	}

	canaryLeft := int32(0)
	if r.canaryDep != nil {
		canaryLeft = max(replicasOf(r.canaryDep), r.canaryDep.Status.Replicas)
	}
	ready := restored && r.stableReady(replicas)
	if ready && r.canaryDep != nil && replicasOf(r.canaryDep) != 0 {
		r.scaleCanary(0)
	}

	switch {
	case !ready:
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling back: waiting for %d stable pods to be available (%d available); the canary keeps its %d pods until then",
			replicas, r.stable.Status.AvailableReplicas, canaryLeft)
	case canaryLeft > 0:
		r.phase, r.reason = v1alpha1.CanaryRollingBack, v1alpha1.ReasonRollingBack
		r.message = fmt.Sprintf("rolling back: %d stable pods available; scaling the canary down to 0 (%d pods left)",
			r.stable.Status.AvailableReplicas, canaryLeft)
	default:
		r.phase, r.reason = v1alpha1.CanaryRolledBack, v1alpha1.ReasonRolledBack
		r.message = fmt.Sprintf("rolled back: stable %q serves %d pods, the canary none", r.stable.Name, replicas)
		if st.Phase != v1alpha1.CanaryRolledBack {
			r.event(corev1.EventTypeNormal, v1alpha1.EventRolledBack, "%s", r.message)
		}
	}
}

// snapshot decodes the Canary's v1alpha1.AnnotationStableSnapshot; nil when there is none.
func (r *reconciler) snapshot() (*StableSnapshot, error) {
	raw, ok := r.canary.Annotations[v1alpha1.AnnotationStableSnapshot]
	if !ok {
		return nil, nil
	}
	var s StableSnapshot
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return nil, fmt.Errorf("decoding annotation %s: %w", v1alpha1.AnnotationStableSnapshot, err)
	}
	return &s, nil
}

// ensureSnapshot decides to record the stable Deployment in the Canary's
// v1alpha1.AnnotationStableSnapshot before the release begins, unless a snapshot of that
// Deployment is already there.
func (r *reconciler) ensureSnapshot() {
	if s, err := r.snapshot(); err == nil && s != nil && s.Deployment == r.stable.Name {
		return
	}
	raw, _ := json.Marshal(StableSnapshot{ // a pod template always encodes
		Deployment: r.stable.Name,
		Replicas:   replicasOf(r.stable),
		Template:   r.stable.Spec.Template,
	})
	r.newSnapshot = string(raw)
}

// templateHash is the hash of what the canary Deployment is made from, besides its replicas.
func (r *reconciler) templateHash() string {
	h := fnv.New32a()
	raw, _ := json.Marshal(r.canary.Spec.Canary.Template)
	h.Write(raw)
	fmt.Fprintf(h, "/minReadySeconds=%d", r.canary.Spec.MinReadySeconds)
	return fmt.Sprintf("%08x", h.Sum32())
}

// newCanaryDeployment builds the canary Deployment with the given replicas.
func (r *reconciler) newCanaryDeployment(replicas int32) *appsv1.Deployment {
	cn := r.canary
	template := cn.Spec.Canary.Template.DeepCopy()
	maxUnavailable := intstr.FromInt32(0)
	maxSurge := intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      cn.Spec.Canary.Name,
			Namespace: cn.Namespace,
			Labels: map[string]string{
				v1alpha1.LabelManagedBy:  v1alpha1.ManagedByAgent,
				v1alpha1.LabelCanaryName: cn.Name,
			},
			Annotations:     map[string]string{v1alpha1.AnnotationTemplateHash: r.templateHash()},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cn, controllerKind)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas:        &replicas,
			Selector:        &metav1.LabelSelector{MatchLabels: maps.Clone(template.Labels)},
			Template:        *template,
			MinReadySeconds: cn.Spec.MinReadySeconds,
			// A new canary template replaces pods one surge pod at a time, never removing an
			// available one first, so capacity holds through template changes too.
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: &maxUnavailable,
					MaxSurge:       &maxSurge,
				},
			},
		},
	}
}

// createCanary decides to create the canary Deployment with the given replicas.
func (r *reconciler) createCanary(replicas int32) {
	d := r.newCanaryDeployment(replicas)
	r.canaryDep, r.canaryNew = d, true
	r.writes = append(r.writes, deploymentWrite{kind: createCanary, object: d.DeepCopy(), to: replicas})
}

// updateCanaryTemplate decides to rewrite the canary Deployment's template and minReadySeconds
// when the Canary's changed, and reports whether it did.
func (r *reconciler) updateCanaryTemplate() bool {
	hash := r.templateHash()
	if r.canaryDep.Annotations[v1alpha1.AnnotationTemplateHash] == hash && r.canaryDep.Spec.MinReadySeconds == r.canary.Spec.MinReadySeconds {
		return false
	}
	d := r.canaryDep.DeepCopy()
	want := r.newCanaryDeployment(replicasOf(d))
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[v1alpha1.AnnotationTemplateHash] = hash
	d.Spec.Template = want.Spec.Template
	d.Spec.MinReadySeconds = want.Spec.MinReadySeconds
	d.Spec.Strategy = want.Spec.Strategy
	r.canaryDep = d
	r.writes = append(r.writes, deploymentWrite{kind: updateCanary, object: d.DeepCopy()})
	return true
}

// replicasPatch is a merge patch setting spec.replicas.
func replicasPatch(n int32) []byte {
	return fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
}

// scaleCanary decides to scale the canary Deployment to n.
func (r *reconciler) scaleCanary(n int32) {
	d := r.canaryDep.DeepCopy()
	from := replicasOf(d)
	d.Spec.Replicas = &n
	r.canaryDep = d
	r.writes = append(r.writes, deploymentWrite{kind: scaleCanary, object: d.DeepCopy(), patch: replicasPatch(n), from: from, to: n})
}

// scaleStable decides to scale the stable Deployment to n.
func (r *reconciler) scaleStable(n int32) {
	d := r.stable.DeepCopy()
	from := replicasOf(d)
	d.Spec.Replicas = &n
	r.stable, r.stableRest = d, true
	r.writes = append(r.writes, deploymentWrite{kind: scaleStable, object: d.DeepCopy(), patch: replicasPatch(n), from: from, to: n})
}

// restoreStable decides to put the snapshot's pod template back on the stable Deployment and set
// its replicas, in one JSON patch (a merge patch would merge the old template into the new one
// instead of replacing it).
func (r *reconciler) restoreStable(snap *StableSnapshot, replicas int32) {
	d := r.stable.DeepCopy()
	patch, _ := json.Marshal([]map[string]any{ // a pod template always encodes
		{"op": "replace", "path": "/spec/template", "value": snap.Template},
		{"op": "replace", "path": "/spec/replicas", "value": replicas},
	})
	from := replicasOf(d)
	d.Spec.Template = snap.Template
	d.Spec.Replicas = &replicas
	r.stable, r.stableRest = d, true
	r.writes = append(r.writes, deploymentWrite{kind: restoreStable, object: d.DeepCopy(), patch: patch, from: from, to: replicas})
}

// event records an Event on the Canary about a decision of this sync; it is sent once the
// sync's status is committed.
func (r *reconciler) event(eventType, reason, format string, args ...interface{}) {
	r.events = append(r.events, event{eventType, reason, fmt.Sprintf(format, args...)})
}

// isOwnedBy reports whether d is controlled by the Canary cn.
func isOwnedBy(d *appsv1.Deployment, cn *v1alpha1.Canary) bool {
	ref := metav1.GetControllerOf(d)
	return ref != nil && ref.UID == cn.UID && ref.Kind == Kind
}

// replicasOf returns a Deployment's spec.replicas (1 when unset, as the API server defaults it).
func replicasOf(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return v1alpha1.ReplicasOrDefault(d.Spec.Replicas)
}

// statusObserved reports whether the Deployment controller has observed d's latest spec, so that
// d's status counts describe it.
func statusObserved(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation
}

// templateLabelsSelected reports whether a Deployment's selector still selects the pod labels of
// a template, which the API server requires of every Deployment.
func templateLabelsSelected(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return !s.Empty() && s.Matches(labels.Set(t.Labels))
}
