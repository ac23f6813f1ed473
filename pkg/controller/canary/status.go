package canary

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

// failure is a write the API server refused, as the Canary's Degraded condition shows it.
type failure struct{ reason, message string }

// computeStatus is the Canary's status after a plan, with fail the write refused while carrying
// it out (nil when none was).
func computeStatus(r *plan, fail *failure) v1alpha1.CanaryStatus {
	st := *r.status.DeepCopy()
	cn := r.canary
	st.ObservedGeneration = cn.Generation
	st.Phase, st.Message = r.phase, r.message
	degraded, reason := r.degraded, r.reason
	if fail != nil {
		degraded, reason = true, fail.reason
		st.Phase, st.Message = v1alpha1.CanaryDegraded, fail.message
	}

	st.CanaryReplicas, st.CanaryAvailable = 0, 0
	r.rel.fillStatus(&st)
	var selector *metav1.LabelSelector
	if r.obs.stable != nil {
		selector = r.obs.stable.Spec.Selector
	}
	fillScale(&st, selector) // autoscale.go

	cond := func(t string, s metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: message,
			ObservedGeneration: cn.Generation, LastTransitionTime: r.now,
		})
	}
	switch {
	case r.degraded:
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, st.Message)
		cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonDegraded, "the controller cannot act on this Canary: see the Degraded condition")
	case degraded:
		// A refused write: Progressing keeps what the release is doing (and retrying).
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, st.Message)
		cond(v1alpha1.ConditionProgressing, progressingStatus(r.phase), r.reason, r.message)
	case st.Abort != nil:
		// Rolled back by itself: Degraded says why until a retry; Progressing, the rollback.
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, st.Abort.Reason, st.Abort.Message)
		cond(v1alpha1.ConditionProgressing, progressingStatus(r.phase), r.reason, r.message)
	case r.stalled:
		cond(v1alpha1.ConditionDegraded, metav1.ConditionTrue, v1alpha1.ReasonProgressDeadlineExceeded, r.message)
		cond(v1alpha1.ConditionProgressing, metav1.ConditionFalse, v1alpha1.ReasonProgressDeadlineExceeded, r.message)
	default:
		cond(v1alpha1.ConditionDegraded, metav1.ConditionFalse, v1alpha1.ReasonAsExpected, "the stable and canary Deployments are as expected")
		cond(v1alpha1.ConditionProgressing, progressingStatus(r.phase), reason, st.Message)
	}
	available := st.CanaryAvailable + st.StableAvailable
	msg := fmt.Sprintf("%d of %d pods available (stable %d, canary %d)", available, cn.Spec.Replicas, st.StableAvailable, st.CanaryAvailable)
	if available >= cn.Spec.Replicas {
		cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonReplicasAvailable, msg)
	} else {
		cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonReplicasUnavailable, msg)
	}
	setTrafficStatus(r.decision, &st)                    // pair_traffic.go
	setAnalysisCondition(r.obs.analysis, &st, cn, r.now) // templates.go
	return st
}

// progressingStatus is the Progressing condition's status in a phase.
func progressingStatus(phase v1alpha1.CanaryPhase) metav1.ConditionStatus {
	if phase == v1alpha1.CanaryProgressing || phase == v1alpha1.CanaryRollingBack {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// writtenStatus is the controller's last status write of a Canary (kept in its
// expectations.StatusWrites): bases are the versions the cache may still hold from before it
// (the version the sync read and those its own metadata patches made), canary is what the write
// returned.
type writtenStatus struct {
	bases  []string
	canary *v1alpha1.Canary
}

// lastWritten returns a copy of the Canary to work from: the cached one, or the controller's own
// last status write while the cache holds a version from before it (otherwise every sync in
// that window would act on a batch state already left, and its status write would conflict).
// It also returns the versions the cache may hold from before the status write of this sync,
// and the last write it works from (nil for the cached Canary).
func (c *Controller) lastWritten(cached *v1alpha1.Canary) (*v1alpha1.Canary, []string, *writtenStatus) {
	if w, _ := c.statuses.Current(expectations.ObjectKey(cached), cached.ResourceVersion, nil); w != nil {
		cn := w.canary.DeepCopy()
		return cn, append(slices.Clone(w.bases), cn.ResourceVersion), w
	}
	return cached.DeepCopy(), []string{cached.ResourceVersion}, nil
}

// updateStatus writes status through the status subresource when it differs from cn's (cn is
// the Canary the sync worked from, with the resourceVersion of its last write; last the write
// it came from, nil for the cached Canary).
//
// A status that differs only in progress (progressOnly) is written at most once per
// progressInterval: the sync that finds it too soon requeues the Canary for the end of the
// interval instead, and whatever sync runs then writes the counts of that moment.
func (c *Controller) updateStatus(ctx context.Context, cn *v1alpha1.Canary, bases []string, status v1alpha1.CanaryStatus, last *writtenStatus) error {
	key := expectations.ObjectKey(cn)
	wait := c.progressWait(key, &cn.Status, &status)
	if wait > 0 {
		c.Queue.AddAfter(cache.ObjectName{Namespace: cn.Namespace, Name: cn.Name}, wait)
	}
	if wait > 0 || equality.Semantic.DeepEqual(cn.Status, status) {
		if last != nil { // the cache may now lag this sync's metadata patches too
			c.statuses.WroteOver(key, bases, last.canary.ResourceVersion, &writtenStatus{bases: bases, canary: last.canary})
		}
		return nil
	}
	cp := cn.DeepCopy()
	cp.Status = status
	out, err := c.statusClient.AppsV1alpha1().Canaries(cn.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		c.statuses.Forget(key)
		return fmt.Errorf("updating status of Canary %s: %w", key, err)
	}
	c.statuses.WroteOver(key, bases, out.ResourceVersion, &writtenStatus{bases: bases, canary: out.DeepCopy()})
	c.mu.Lock()
	c.progressAt[key] = c.clock.Now()
	c.mu.Unlock()
	return nil
}

// ProgressInterval is the agent's least time between two status writes of a Canary that differ
// only in progress: while a step's pods come up, the Deployment controller reports their availability
// every few pods, and writing each count cost a status write apiece (most of the agent's writes
// in a release; bench/RESULTS.md, "Against Argo Rollouts"). A change of phase, batch, batch
// state, condition status or reason, analysis, traffic or abort is written at once.
const ProgressInterval = 2 * time.Second

// progressWait is how long to hold a status that differs from old only in progress (0: write
// it now).
func (c *Controller) progressWait(key string, old, status *v1alpha1.CanaryStatus) time.Duration {
	if c.progressInterval <= 0 || !progressOnly(old, status) {
		return 0
	}
	c.mu.Lock()
	at, ok := c.progressAt[key]
	c.mu.Unlock()
	if !ok {
		return 0
	}
	return max(0, c.progressInterval-c.clock.Since(at))
}

func (c *Controller) forgetProgress(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.progressAt, key)
}

// progressOnly reports whether two statuses differ, and only in progress: the pod counts, the
// message and the conditions' messages, which say the same counts.
func progressOnly(old, status *v1alpha1.CanaryStatus) bool {
	return !equality.Semantic.DeepEqual(old, status) &&
		equality.Semantic.DeepEqual(withoutProgress(old), withoutProgress(status))
}

func withoutProgress(s *v1alpha1.CanaryStatus) *v1alpha1.CanaryStatus {
	out := s.DeepCopy()
	out.Message = ""
	out.Replicas, out.CanaryReplicas, out.CanaryAvailable, out.StableReplicas, out.StableAvailable = 0, 0, 0, 0, 0
	for i := range out.Conditions {
		out.Conditions[i].Message = ""
	}
	return out
}

// reportStatusRefused makes a status the API server refused (for a reason other than a stale
// read or a deleted Canary) visible: a Warning Event, and the Canary's last status with the
// refusal as its Degraded condition, which is small and was accepted before.
func (c *Controller) reportStatusRefused(ctx context.Context, cn *v1alpha1.Canary, now metav1.Time, err error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return
	}
	msg := err.Error()
	c.Recorder.Eventf(cn, corev1.EventTypeWarning, v1alpha1.ReasonFailedUpdate, "%s", msg)
	cp := cn.DeepCopy()
	cp.Status.Phase, cp.Status.Message = v1alpha1.CanaryDegraded, msg
	meta.SetStatusCondition(&cp.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonFailedUpdate,
		Message: msg, ObservedGeneration: cn.Generation, LastTransitionTime: now,
	})
	_, _ = c.statusClient.AppsV1alpha1().Canaries(cn.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
}
