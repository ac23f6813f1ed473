package notifications

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
)

// failed reports failed deliveries: a Warning Event per attempt, the condition False when it
// was not (or said something else), and a retry after the backoff. The release is not held:
// nothing but this controller waits for a notification.
func (c *Controller) failed(ctx context.Context, cn *v1alpha1.Canary, st *canaryState, message string) error {
	c.mu.Lock()
	st.attempts++
	attempts, write := st.attempts, st.failing != message
	wait := backoff(attempts)
	st.retryAt = c.clock.Now().Add(wait)
	c.mu.Unlock()
	c.Recorder.Eventf(cn, corev1.EventTypeWarning, notify.EventFailed, "attempt %d failed, retrying in %s: %s", attempts, wait, message)
	klog.FromContext(ctx).V(2).Info("Notification not delivered; retrying", "canary", klog.KObj(cn), "attempt", attempts, "after", wait)
	c.Queue.AddAfter(keyOf(cn), wait)
	if !write {
		return nil
	}
	if err := c.applyCondition(ctx, cn, metav1.ConditionFalse, notify.ReasonDeliveryFailed, message+"; retrying with backoff"); err != nil {
		return err
	}
	c.mu.Lock()
	st.failing = message
	c.mu.Unlock()
	return nil
}

// settled clears a failure: every notification owed was delivered, or is no longer owed (its
// trigger stopped firing).
func (c *Controller) settled(ctx context.Context, cn *v1alpha1.Canary, st *canaryState) error {
	c.mu.Lock()
	st.attempts, st.retryAt = 0, time.Time{}
	failing := st.failing != ""
	c.mu.Unlock()
	cond := meta.FindStatusCondition(cn.Status.Conditions, notify.ConditionDelivered)
	if !failing && (cond == nil || cond.Status == metav1.ConditionTrue) {
		return nil
	}
	if err := c.applyCondition(ctx, cn, metav1.ConditionTrue, notify.ReasonDelivered, "every notification owed was delivered (or its event is over)"); err != nil {
		return err
	}
	c.mu.Lock()
	st.failing = ""
	c.mu.Unlock()
	return nil
}

// applyCondition sets the condition NotificationsDelivered with a server-side apply of the
// status subresource as FieldManager: it owns that entry of the conditions list and nothing
// else, so the canary controller's own status writes keep it and it keeps theirs (a write
// based on an older version conflicts and is retried, as any other).
func (c *Controller) applyCondition(ctx context.Context, cn *v1alpha1.Canary, status metav1.ConditionStatus, reason, message string) error {
	cond := metav1.Condition{Type: notify.ConditionDelivered, Status: status, Reason: reason, Message: truncate(message, 32768),
		ObservedGeneration: cn.Generation, LastTransitionTime: metav1.NewTime(c.clock.Now())}
	if old := meta.FindStatusCondition(cn.Status.Conditions, notify.ConditionDelivered); old != nil && old.Status == status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	apply := map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "Canary",
		"metadata": map[string]any{"name": cn.Name, "namespace": cn.Namespace},
		"status":   map[string]any{"conditions": []metav1.Condition{cond}},
	}
	body, _ := json.Marshal(apply)
	force := true
	_, err := c.client.AppsV1alpha1().Canaries(cn.Namespace).Patch(ctx, cn.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: &force}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func keyOf(cn *v1alpha1.Canary) base.Key { return base.Key{Namespace: cn.Namespace, Name: cn.Name} }
