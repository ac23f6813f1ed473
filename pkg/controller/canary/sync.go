package canary

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

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

// reconciler is the state of one sync of one Canary.
type reconciler struct {
	c      *Controller
	ctx    context.Context
	logger logr.Logger
	now    metav1.Time

	canary *v1alpha1.Canary      // a deep copy; only its resourceVersion changes
	status v1alpha1.CanaryStatus // the status being computed

	plan      []int32
	stable    *appsv1.Deployment // from the lister (or a write's response); never mutated
	canaryDep *appsv1.Deployment // nil when it does not exist

	phase      v1alpha1.CanaryPhase
	reason     string // reason of the Progressing (or Degraded) condition
	message    string
	degraded   bool
	canaryNew  bool // the canary Deployment is created in this sync: its status says nothing yet
	stableRest bool // the stable Deployment is written in this sync: wait to see its status

	// events are the Events of the decisions of this sync, sent once its status is committed.
	events []func()
	// writes are the Deployment writes decided by this sync, in order. They are made only
	// after the status update, which carries the Canary's resourceVersion as read, has
	// succeeded: a sync working from a stale Canary (the cache not yet showing this
	// controller's last status) is refused there and writes nothing.
	writes []write
}

// write is one decided Deployment write.
type write struct {
	what string
	do   func(ctx context.Context) error
}

// reconcile decides the writes for the Canary (r.writes) and the outcome (r.status, r.phase,
// r.message). Only the snapshot of the stable Deployment is written here, when a release begins.
func (r *reconciler) reconcile() error {
	cn := r.canary
	plan, err := v1alpha1.CanaryBatchPlan(&cn.Spec)
	if err != nil {
		r.setDegraded(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("invalid batch plan: %v", err))
		return nil
	}
	r.plan = plan

	stable, err := r.c.deploymentLister.Deployments(cn.Namespace).Get(cn.Spec.StableRef.Name)
	if apierrors.IsNotFound(err) {
		r.canaryDep, _ = r.ownedCanary()
		r.setDegraded(v1alpha1.ReasonStableNotFound, fmt.Sprintf(
			"stable Deployment %q not found in namespace %q: nothing is changed until it exists",
			cn.Spec.StableRef.Name, cn.Namespace))
		return nil
	}
	if err != nil {
		return err
	}
	r.stable = stable

	canaryDep, err := r.c.deploymentLister.Deployments(cn.Namespace).Get(cn.Spec.Canary.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case !isOwnedBy(canaryDep, cn):
		r.setDegraded(v1alpha1.ReasonCanaryNameConflict, fmt.Sprintf(
			"Deployment %q already exists and is not owned by this Canary: choose another spec.canary.name or delete that Deployment; nothing is changed until then",
			cn.Spec.Canary.Name))
		return nil
	default:
		r.canaryDep = canaryDep
	}

	if len(cn.Spec.Canary.Template.Labels) == 0 {
		r.setDegraded(v1alpha1.ReasonInvalidSpec,
			"spec.canary.template.metadata.labels is empty: the labels are the canary Deployment's selector")
		return nil
	}
	if r.canaryDep != nil && !templateLabelsSelected(r.canaryDep.Spec.Selector, &cn.Spec.Canary.Template) {
		r.setDegraded(v1alpha1.ReasonSelectorMismatch, fmt.Sprintf(
			"the labels of spec.canary.template no longer match the selector of Deployment %q, which cannot change: restore the labels, or delete that Deployment to have it created again",
			cn.Spec.Canary.Name))
		return nil
	}

	if cn.Spec.Rollback {
		return r.rollback()
	}
	return r.progress()
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
func (r *reconciler) progress() error {
	cn := r.canary
	st := &r.status
	n := int32(len(r.plan))

	if st.Phase == v1alpha1.CanaryRollingBack || st.Phase == v1alpha1.CanaryRolledBack {
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
			return nil
		}
		r.scale(replicasOf(r.canaryDep), true)
		k := st.CurrentBatch
		r.message = fmt.Sprintf("paused by spec.paused at batch %d/%d: %d of %d canary pods available, stable at %d",
			k, n, r.canaryAvailable(), replicasOf(r.canaryDep), replicasOf(r.stable))
		return nil
	}

	if st.CurrentBatch == 0 {
		if err := r.ensureSnapshot(); err != nil {
			return err
		}
		r.startBatch(1)
	}

	// Advance as far as the observed Deployments allow.
	for {
		k := st.CurrentBatch
		b := &st.Batches[k-1]
		switch b.State {
		case v1alpha1.BatchPending:
			r.startBatch(k)
			continue
		case v1alpha1.BatchUpgrading:
			if !r.batchDone(k) {
				break
			}
			b.FinishTime = r.now.DeepCopy()
			if r.needsPause(k) {
				b.State = v1alpha1.BatchPaused
				r.event(corev1.EventTypeNormal, v1alpha1.EventBatchPaused,
					"batch %d/%d complete with %d canary pods: waiting for promotion (spec.approvedBatch >= %d)", k, n, r.plan[k-1], k)
				break
			}
			b.State = v1alpha1.BatchCompleted
			r.event(corev1.EventTypeNormal, v1alpha1.EventBatchCompleted, "batch %d/%d complete with %d canary pods", k, n, r.plan[k-1])
			if k < n {
				r.startBatch(k + 1)
				continue
			}
			r.event(corev1.EventTypeNormal, v1alpha1.EventReleaseComplete, "all %d batches complete: the canary serves %d pods", n, r.plan[n-1])
		case v1alpha1.BatchPaused:
			if cn.Spec.ApprovedBatch < k {
				break
			}
			b.State = v1alpha1.BatchCompleted
			r.event(corev1.EventTypeNormal, v1alpha1.EventPromoted, "batch %d/%d promoted (spec.approvedBatch=%d)", k, n, cn.Spec.ApprovedBatch)
			if k < n {
				r.startBatch(k + 1)
				continue
			}
		case v1alpha1.BatchCompleted:
			if k < n {
				r.startBatch(k + 1)
				continue
			}
		}
		break
	}

	k := st.CurrentBatch
	target := r.plan[k-1]
	r.scale(target, false)

	switch b := st.Batches[k-1]; {
	case b.State == v1alpha1.BatchPaused:
		r.phase, r.reason = v1alpha1.CanaryPaused, v1alpha1.ReasonWaitingForPromotion
		r.message = fmt.Sprintf("batch %d/%d complete with %d canary pods: waiting for promotion (kubectl workload promote, or spec.approvedBatch=%d)",
			k, n, target, k)
	case b.State == v1alpha1.BatchCompleted && k == n:
		r.phase, r.reason = v1alpha1.CanaryCompleted, v1alpha1.ReasonCompleted
		r.message = fmt.Sprintf("all %d batches complete: %d of %d canary pods available, stable at %d",
			n, r.canaryAvailable(), target, replicasOf(r.stable))
	default:
		r.phase, r.reason = v1alpha1.CanaryProgressing, v1alpha1.ReasonBatchUpgrading
		r.message = fmt.Sprintf("batch %d/%d: %d of %d canary pods available, stable at %d",
			k, n, r.canaryAvailable(), target, replicasOf(r.stable))
	}
	return nil
}

// completed reports whether every batch of the plan has completed.
func (r *reconciler) completed() bool {
	n := int32(len(r.plan))
	return r.status.CurrentBatch == n && r.status.Batches[n-1].State == v1alpha1.BatchCompleted
}

// alignBatches makes status.batches describe the plan: one entry per batch, in order, keeping
// the state and times already recorded.
func (r *reconciler) alignBatches() {
	old := map[int32]v1alpha1.CanaryBatchStatus{}
	for _, b := range r.status.Batches {
		old[b.Index] = b
	}
	batches := make([]v1alpha1.CanaryBatchStatus, len(r.plan))
	for i, size := range r.plan {
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
	r.event(corev1.EventTypeNormal, v1alpha1.EventBatchStarted, "batch %d/%d started: %d canary pods", k, len(r.plan), r.plan[k-1])
}

// needsPause reports whether the release waits for promotion after batch k.
func (r *reconciler) needsPause(k int32) bool {
	spec := &r.canary.Spec
	if k >= int32(len(r.plan)) || spec.ApprovedBatch >= k {
		return false
	}
	switch spec.PauseType {
	case v1alpha1.PauseAll:
		return true
	case v1alpha1.PauseNone:
		return false
	default: // First, the default
		return k == 1
	}
}

// batchDone reports whether batch k is complete: the canary Deployment runs exactly the batch's
// pods, from the current template, all of them available.
func (r *reconciler) batchDone(k int32) bool {
	d := r.canaryDep
	if d == nil || r.canaryNew {
		return false
	}
	target := r.plan[k-1]
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
func (r *reconciler) rollback() error {
	cn := r.canary
	st := &r.status
	replicas := cn.Spec.Replicas
	if st.Phase != v1alpha1.CanaryRollingBack && st.Phase != v1alpha1.CanaryRolledBack {
		r.event(corev1.EventTypeNormal, v1alpha1.EventRollingBack,
			"rollback requested at batch %d: scaling stable %q back to %d before the canary goes", st.CurrentBatch, cn.Spec.StableRef.Name, replicas)
	}

	snap, err := r.snapshot()
	if err != nil || snap == nil || snap.Deployment != r.stable.Name {
		if st.Phase != v1alpha1.CanaryRollingBack && st.Phase != v1alpha1.CanaryRolledBack {
			r.event(corev1.EventTypeWarning, v1alpha1.EventSnapshotMissing,
				"no usable %s annotation (%v): the stable pod template is kept as it is", v1alpha1.AnnotationStableSnapshot, err)
		}
		snap = nil
	}
	restored := snap == nil || equality.Semantic.DeepEqual(snap.Template, r.stable.Spec.Template)
	switch {
	case !restored:
		if err := r.restoreStable(snap, replicas); err != nil {
			return err
		}
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
	return nil
}

// finishStatus fills in the phase, message, counts and conditions.
func (r *reconciler) finishStatus() {
	st := &r.status
	cn := r.canary
	st.ObservedGeneration = cn.Generation
	st.Phase = r.phase
	st.Message = r.message

	st.CanaryReplicas, st.CanaryAvailable = 0, 0
	if r.canaryDep != nil {
		st.CanaryReplicas = replicasOf(r.canaryDep)
		st.CanaryAvailable = r.canaryAvailable()
	}
	st.StableReplicas, st.StableAvailable = 0, 0
	if r.stable != nil {
		st.StableReplicas = replicasOf(r.stable)
		st.StableAvailable = r.stable.Status.AvailableReplicas
	}

	cond := func(t string, s metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: message,
			ObservedGeneration: cn.Generation, LastTransitionTime: r.now,
		})
	}
	if r.degraded {
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, r.reason, r.message)
		cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonDegraded, "the controller cannot act on this Canary: see the Degraded condition")
	} else {
		cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "the stable and canary Deployments are as expected")
		progressing := metav1.ConditionFalse
		if r.phase == v1alpha1.CanaryProgressing || r.phase == v1alpha1.CanaryRollingBack {
			progressing = metav1.ConditionTrue
		}
		cond(v1alpha1.ConditionProgressing, progressing, r.reason, r.message)
	}
	available := st.CanaryAvailable + st.StableAvailable
	if available >= cn.Spec.Replicas {
		cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonReplicasAvailable,
			fmt.Sprintf("%d of %d pods available (stable %d, canary %d)", available, cn.Spec.Replicas, st.StableAvailable, st.CanaryAvailable))
	} else {
		cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonReplicasUnavailable,
			fmt.Sprintf("%d of %d pods available (stable %d, canary %d)", available, cn.Spec.Replicas, st.StableAvailable, st.CanaryAvailable))
	}
}

// statusEqual reports whether two statuses are the same for the API.
func statusEqual(a, b *v1alpha1.CanaryStatus) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// ownedCanary returns the canary Deployment if it exists and this Canary owns it.
func (r *reconciler) ownedCanary() (*appsv1.Deployment, error) {
	d, err := r.c.deploymentLister.Deployments(r.canary.Namespace).Get(r.canary.Spec.Canary.Name)
	if err != nil || !isOwnedBy(d, r.canary) {
		return nil, err
	}
	return d, nil
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

// ensureSnapshot records the stable Deployment in the Canary's v1alpha1.AnnotationStableSnapshot before
// the release begins, unless a snapshot of that Deployment is already there.
func (r *reconciler) ensureSnapshot() error {
	if s, err := r.snapshot(); err == nil && s != nil && s.Deployment == r.stable.Name {
		return nil
	}
	raw, err := json.Marshal(StableSnapshot{
		Deployment: r.stable.Name,
		Replicas:   replicasOf(r.stable),
		Template:   r.stable.Spec.Template,
	})
	if err != nil {
		return err
	}
	// With the resourceVersion read, the patch applies only to the Canary as this sync saw it.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": r.canary.ResourceVersion,
			"annotations":     map[string]string{v1alpha1.AnnotationStableSnapshot: string(raw)},
		},
	})
	if err != nil {
		return err
	}
	cn := r.canary
	updated, err := r.c.client.AppsV1alpha1().Canaries(cn.Namespace).Patch(r.ctx, cn.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("recording the stable Deployment in annotation %s: %w", v1alpha1.AnnotationStableSnapshot, err)
	}
	// The status update that ends this sync must carry the new resourceVersion.
	cn.ResourceVersion = updated.ResourceVersion
	if cn.Annotations == nil {
		cn.Annotations = map[string]string{}
	}
	cn.Annotations[v1alpha1.AnnotationStableSnapshot] = string(raw)
	return nil
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
	r.decide("creating canary Deployment "+d.Name, func(ctx context.Context) error {
		_, err := r.c.kubeClient.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			if !apierrors.IsAlreadyExists(err) { // the cache lags a create of ours: retry once it caught up
				r.emit(corev1.EventTypeWarning, "FailedCreate", "creating canary Deployment %q: %v", d.Name, err)
			}
			return err
		}
		r.emit(corev1.EventTypeNormal, v1alpha1.EventCanaryCreated, "created canary Deployment %q with %d replicas", d.Name, replicas)
		return nil
	})
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
	update := d.DeepCopy()
	r.decide("updating the template of canary Deployment "+d.Name, func(ctx context.Context) error {
		if _, err := r.c.kubeClient.AppsV1().Deployments(update.Namespace).Update(ctx, update, metav1.UpdateOptions{}); err != nil {
			return err
		}
		r.emit(corev1.EventTypeNormal, v1alpha1.EventCanaryUpdated, "updated the pod template of canary Deployment %q", update.Name)
		return nil
	})
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
	r.decide(fmt.Sprintf("scaling canary Deployment %s to %d", d.Name, n), func(ctx context.Context) error {
		if _, err := r.c.kubeClient.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, replicasPatch(n), metav1.PatchOptions{}); err != nil {
			return err
		}
		r.emit(corev1.EventTypeNormal, v1alpha1.EventScaledCanary, "scaled canary Deployment %q from %d to %d", d.Name, from, n)
		return nil
	})
}

// scaleStable decides to scale the stable Deployment to n.
func (r *reconciler) scaleStable(n int32) {
	d := r.stable.DeepCopy()
	from := replicasOf(d)
	d.Spec.Replicas = &n
	r.stable, r.stableRest = d, true
	r.decide(fmt.Sprintf("scaling stable Deployment %s to %d", d.Name, n), func(ctx context.Context) error {
		if _, err := r.c.kubeClient.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, replicasPatch(n), metav1.PatchOptions{}); err != nil {
			return err
		}
		r.emit(corev1.EventTypeNormal, v1alpha1.EventScaledStable, "scaled stable Deployment %q from %d to %d", d.Name, from, n)
		return nil
	})
}

// restoreStable puts the snapshot's pod template back on the stable Deployment and sets its
// replicas, in one JSON patch (a merge patch would merge the old template into the new one
// instead of replacing it).
func (r *reconciler) restoreStable(snap *StableSnapshot, replicas int32) error {
	d := r.stable.DeepCopy()
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/template", "value": snap.Template},
		{"op": "replace", "path": "/spec/replicas", "value": replicas},
	})
	if err != nil {
		return err
	}
	d.Spec.Template = snap.Template
	d.Spec.Replicas = &replicas
	r.stable, r.stableRest = d, true
	r.decide("restoring the pod template of stable Deployment "+d.Name, func(ctx context.Context) error {
		if _, err := r.c.kubeClient.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			return err
		}
		r.emit(corev1.EventTypeNormal, v1alpha1.EventRestoredStable,
			"restored the pod template of stable Deployment %q from when the release began, with %d replicas", d.Name, replicas)
		return nil
	})
	return nil
}
