package canary

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// decision is what one sync of one Canary decides, whatever its release mode: the batch state
// (status), the outcome (phase, reason, message), the Canary's own writes and the Events. The
// step machine (plan) and the mode's releasePlan both decide into it; it is a pure function of
// what the sync observed.
type decision struct {
	obs     *observed
	now     metav1.Time
	traffic *trafficPlan // nil without spec.trafficRouting (pair_traffic.go)

	canary *v1alpha1.Canary      // the observed Canary; only its annotations and approval change
	status v1alpha1.CanaryStatus // the batch state being computed
	steps  []step

	phase    v1alpha1.CanaryPhase
	reason   string // reason of the Progressing (or Degraded) condition
	message  string
	degraded bool

	// stalled: the current step did not become available within spec.progressDeadlineSeconds;
	// deadlineMessage says so.
	stalled         bool
	deadlineMessage string
	// inconclusive says which checks hold the current step for a person.
	inconclusive string
	// requeueAfter is when the release must be looked at again though nothing it watches
	// changes (a timed pause ends, a check measures, a progress deadline passes); 0 for never.
	requeueAfter time.Duration

	// resetApproval is the spec.approvedBatch to set back to 0 as a new release starts (0 for
	// none); newSnapshot the v1alpha1.AnnotationStableSnapshot to record on the Canary before any
	// workload is written ("" when it is there already).
	resetApproval int32
	newSnapshot   string
	// events are the Events of the decisions, sent once the sync's status is committed.
	events []event
}

// event is one Event to record on the Canary.
type event struct{ eventType, reason, message string }

// restart starts a new release from step 1, every pause waiting for a person again: the
// approvals given were the last release's.
func (r *decision) restart() {
	st := &r.status
	st.CurrentBatch, st.Batches, st.Analysis, st.BackgroundAnalysis = 0, nil, nil, nil
	if r.canary.Spec.ApprovedBatch != 0 {
		r.resetApproval = r.canary.Spec.ApprovedBatch
		r.canary.Spec.ApprovedBatch = 0
	}
}

// checkStatus is the status of the current step's check named name, nil when there is none.
func (r *decision) checkStatus(name string) *v1alpha1.AnalysisCheckStatus {
	return findStatus(r.status.Analysis, name)
}

// findStatus is the status named name in list, nil when there is none.
func findStatus(list []v1alpha1.AnalysisCheckStatus, name string) *v1alpha1.AnalysisCheckStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// applyMeasurements puts this sync's measurements (taken before the plan, for the step the
// status said was baking) into the status the plan works on.
func (r *decision) applyMeasurements() {
	for name, m := range r.obs.measured {
		if bg, ok := strings.CutPrefix(name, backgroundKey); ok {
			if st := findStatus(r.status.BackgroundAnalysis, bg); st != nil {
				*st = m.status
			}
		} else if st := r.checkStatus(name); st != nil {
			*st = m.status
		}
	}
}

// requeueAt asks for another sync at t.
func (r *decision) requeueAt(t time.Time) {
	d := max(t.Sub(r.now.Time), time.Second) // the status has second precision: never spin
	if r.requeueAfter == 0 || d < r.requeueAfter {
		r.requeueAfter = d
	}
}

// aborted reports whether the release was aborted by itself and not retried since.
func (r *decision) aborted() bool {
	a := r.status.Abort
	return a != nil && a.Retries >= r.canary.Spec.Retries
}

// abort records that the release rolls back by itself, and why.
func (r *decision) abort(reason, check, message string) {
	r.status.Abort = &v1alpha1.CanaryAbort{
		Reason: reason, Message: clip(message), Step: r.status.CurrentBatch, Check: check,
		Retries: r.canary.Spec.Retries, Time: r.now,
	}
	r.event(corev1.EventTypeWarning, reason, "%s: rolling back", message)
}

// retry starts an aborted release again from step 1 once spec.retries rose above the retries
// the abort recorded (kubectl workload retry).
func (r *decision) retry() {
	st := &r.status
	if st.Abort == nil || st.Abort.Retries >= r.canary.Spec.Retries {
		return
	}
	r.event(corev1.EventTypeNormal, v1alpha1.EventRetried,
		"spec.retries is %d: the release aborted at step %d (%s) starts again from step 1", r.canary.Spec.Retries, st.Abort.Step, st.Abort.Reason)
	st.Abort, st.CurrentBatch, st.Batches, st.Analysis, st.BackgroundAnalysis = nil, 0, nil, nil, nil
	st.Phase = v1alpha1.CanaryProgressing // not rolling back any more: no second restart
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionProgressing)
}

// clip keeps a message within the 2048 characters status.abort.message allows.
func clip(s string) string {
	if len(s) <= 2048 {
		return s
	}
	return s[:2045] + "..."
}

// setDegraded records that the controller cannot act on the Canary and why. Nothing is written
// to any Deployment.
func (r *decision) setDegraded(reason, message string) {
	if r.status.Phase != v1alpha1.CanaryDegraded || r.status.Message != message {
		r.event(corev1.EventTypeWarning, reason, "%s", message)
	}
	r.degraded = true
	r.phase = v1alpha1.CanaryDegraded
	r.reason = reason
	r.message = message
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
func (r *decision) completed() bool {
	n := int32(len(r.steps))
	return r.status.CurrentBatch == n && r.status.Batches[n-1].State == v1alpha1.BatchCompleted
}

// event records an Event on the Canary about a decision of this sync; it is sent once the
// sync's status is committed.
func (r *decision) event(eventType, reason, format string, args ...interface{}) {
	r.events = append(r.events, event{eventType, reason, fmt.Sprintf(format, args...)})
}
