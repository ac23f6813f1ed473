package notify

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The built-in triggers: every release event a person acts on.
const (
	OnStepStarted           = "on-step-started"
	OnPaused                = "on-paused"
	OnAnalysisInconclusive  = "on-analysis-inconclusive"
	OnRolledBack            = "on-rolled-back"
	OnDeadlineExceeded      = "on-deadline-exceeded"
	OnAborted               = "on-aborted"
	OnCompleted             = "on-completed"
	OnContested             = "on-contested"
	triggerPrefix           = "on-"
	occurrenceTimeFormat    = time.RFC3339
	occurrenceNotStartedYet = "-"
)

// Trigger is a built-in trigger: when it fires, read from a Canary as the agent wrote it.
type Trigger struct {
	// Name is the trigger's name in subscriptions (on-paused).
	Name string
	// occurrence returns the trigger's current occurrence on the Canary, and whether it fires
	// at all. An occurrence names one event (step 2 of the release started at T paused), so
	// that a notification is sent once per event: the same state seen again (a resync, a new
	// leader) is the same occurrence, a new event is a new one.
	occurrence func(cn *v1alpha1.Canary) (string, bool)
	// command is the plugin command to act on the event ("" when there is nothing to do).
	command func(ref string) string
}

// Triggers lists the built-in triggers, in the order their notifications are sent when several
// fire at once.
var Triggers = []Trigger{
	{OnStepStarted, stepStarted, func(ref string) string { return "kubectl workload status -w " + ref }},
	{OnPaused, stepWaiting(v1alpha1.ReasonWaitingForPromotion), func(ref string) string { return "kubectl workload promote " + ref }},
	{OnAnalysisInconclusive, stepWaiting(v1alpha1.ReasonAnalysisInconclusive), func(ref string) string {
		return "kubectl workload promote " + ref + " (accept), or kubectl workload abort " + ref + " (roll back)"
	}},
	{OnDeadlineExceeded, degradedBy(v1alpha1.ReasonProgressDeadlineExceeded), func(ref string) string {
		return "kubectl workload status " + ref + ", then kubectl workload abort " + ref + " to roll back"
	}},
	{OnContested, degradedBy(v1alpha1.ReasonDeploymentContested, v1alpha1.ReasonHTTPRouteContested), func(ref string) string {
		return "kubectl workload status " + ref + " (the message names the other field manager)"
	}},
	{OnAborted, aborted, func(ref string) string { return "kubectl workload retry " + ref + " (after fixing what was wrong)" }},
	{OnRolledBack, rolledBack, func(ref string) string { return "kubectl workload retry " + ref + " (after fixing what failed)" }},
	{OnCompleted, completed, func(ref string) string { return "" }},
}

// TriggerNamed returns the built-in trigger name names; "paused" means "on-paused".
func TriggerNamed(name string) (Trigger, bool) {
	if !strings.HasPrefix(name, triggerPrefix) {
		name = triggerPrefix + name
	}
	for _, t := range Triggers {
		if t.Name == name {
			return t, true
		}
	}
	return Trigger{}, false
}

// TriggerNames lists the built-in triggers' names.
func TriggerNames() []string {
	names := make([]string, len(Triggers))
	for i, t := range Triggers {
		names[i] = t.Name
	}
	return names
}

// Occurrence returns the trigger's current occurrence on cn and whether it fires.
func (t Trigger) Occurrence(cn *v1alpha1.Canary) (string, bool) { return t.occurrence(cn) }

// Fired is a trigger firing on a Canary.
type Fired struct {
	Trigger    Trigger
	Occurrence string
}

// Fire returns the triggers that fire on cn now, in the order of Triggers.
func Fire(cn *v1alpha1.Canary) []Fired {
	var out []Fired
	for _, t := range Triggers {
		if occ, ok := t.occurrence(cn); ok {
			out = append(out, Fired{Trigger: t, Occurrence: occ})
		}
	}
	return out
}

// currentBatch returns the status of the step being released, or nil.
func currentBatch(cn *v1alpha1.Canary) *v1alpha1.CanaryBatchStatus {
	k := cn.Status.CurrentBatch
	for i := range cn.Status.Batches {
		if cn.Status.Batches[i].Index == k && k > 0 {
			return &cn.Status.Batches[i]
		}
	}
	return nil
}

// stepOccurrence names step k as it started at start: a step started again (a changed template
// while it baked, a retried release) is a new occurrence.
func stepOccurrence(b *v1alpha1.CanaryBatchStatus) string {
	return fmt.Sprintf("step %d at %s", b.Index, stamp(b.StartTime))
}

// release names the release: when its first step started (a retried or restarted release
// starts it again).
func release(cn *v1alpha1.Canary) string {
	for _, b := range cn.Status.Batches {
		if b.Index == 1 {
			return "release at " + stamp(b.StartTime)
		}
	}
	return "release at " + occurrenceNotStartedYet
}

func stamp(t *metav1.Time) string {
	if t == nil {
		return occurrenceNotStartedYet
	}
	return t.UTC().Format(occurrenceTimeFormat)
}

// releasing reports whether the release moves forward (not rolled back or being rolled back).
func releasing(cn *v1alpha1.Canary) bool {
	return !cn.Spec.Rollback && cn.Status.Abort == nil &&
		(cn.Status.Phase == v1alpha1.CanaryProgressing || cn.Status.Phase == v1alpha1.CanaryPaused)
}

// stepStarted fires for the step being released, from the moment it started. A step that
// started and ended while no agent watched is not announced afterwards (it would be news of
// the past); the step after it is.
func stepStarted(cn *v1alpha1.Canary) (string, bool) {
	b := currentBatch(cn)
	if b == nil || b.StartTime == nil || !releasing(cn) {
		return "", false
	}
	return stepOccurrence(b), true
}

// stepWaiting fires while the current step waits for a person for reason (the Progressing
// condition the agent writes: WaitingForPromotion, AnalysisInconclusive).
func stepWaiting(reason string) func(cn *v1alpha1.Canary) (string, bool) {
	return func(cn *v1alpha1.Canary) (string, bool) {
		c := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.ConditionProgressing)
		b := currentBatch(cn)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || b == nil || !releasing(cn) {
			return "", false
		}
		return stepOccurrence(b), true
	}
}

// degradedBy fires while the Degraded condition is True for one of reasons. The occurrence is
// the reason and the condition's last transition: the condition staying True is one event.
func degradedBy(reasons ...string) func(cn *v1alpha1.Canary) (string, bool) {
	return func(cn *v1alpha1.Canary) (string, bool) {
		c := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.ConditionDegraded)
		if c == nil || c.Status != metav1.ConditionTrue {
			return "", false
		}
		for _, r := range reasons {
			if c.Reason == r {
				return fmt.Sprintf("%s since %s", r, stamp(&c.LastTransitionTime)), true
			}
		}
		return "", false
	}
}

// aborted fires when a person aborted the release (spec.rollback, written by `abort`): the
// agent rolls back or rolled back without an abort of its own in status.
func aborted(cn *v1alpha1.Canary) (string, bool) {
	phase := cn.Status.Phase
	if !cn.Spec.Rollback || cn.Status.Abort != nil || (phase != v1alpha1.CanaryRollingBack && phase != v1alpha1.CanaryRolledBack) {
		return "", false
	}
	return release(cn), true
}

// rolledBack fires once a release the agent aborted by itself (status.abort: a failed check, a
// progress deadline with progressDeadlineAbort) is rolled back.
func rolledBack(cn *v1alpha1.Canary) (string, bool) {
	a := cn.Status.Abort
	if a == nil || cn.Status.Phase != v1alpha1.CanaryRolledBack {
		return "", false
	}
	return fmt.Sprintf("%s at step %d at %s", a.Reason, a.Step, stamp(&a.Time)), true
}

// completed fires when the release completed.
func completed(cn *v1alpha1.Canary) (string, bool) {
	if cn.Status.Phase != v1alpha1.CanaryCompleted || cn.Spec.Rollback {
		return "", false
	}
	return release(cn), true
}
