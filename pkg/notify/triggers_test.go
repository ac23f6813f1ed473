package notify

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

// canaryAt is a Canary of three steps at step k (state), with the given phase and conditions.
func canaryAt(k int32, state v1alpha1.BatchState, phase v1alpha1.CanaryPhase, conds ...metav1.Condition) *v1alpha1.Canary {
	cn := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"}}
	cn.Status.Phase, cn.Status.CurrentBatch, cn.Status.Conditions = phase, k, conds
	for i := int32(1); i <= 3; i++ {
		b := v1alpha1.CanaryBatchStatus{Index: i, State: v1alpha1.BatchPending}
		switch {
		case i < k:
			b.State, b.StartTime = v1alpha1.BatchCompleted, &t0
		case i == k:
			b.State, b.StartTime = state, &t1
		}
		if i == 1 && k >= 1 {
			b.StartTime = &t0
		}
		cn.Status.Batches = append(cn.Status.Batches, b)
	}
	return cn
}

func cond(t, reason string, s metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, LastTransitionTime: t1}
}

func TestFire(t *testing.T) {
	progressing := cond(v1alpha1.ConditionProgressing, v1alpha1.ReasonBatchUpgrading, metav1.ConditionTrue)
	asExpected := cond(v1alpha1.ConditionDegraded, v1alpha1.ReasonAsExpected, metav1.ConditionFalse)
	aborted := canaryAt(2, v1alpha1.BatchBaking, v1alpha1.CanaryRolledBack, cond(v1alpha1.ConditionDegraded, v1alpha1.ReasonAnalysisFailed, metav1.ConditionTrue))
	aborted.Status.Abort = &v1alpha1.CanaryAbort{Reason: v1alpha1.ReasonAnalysisFailed, Step: 2, Time: t1}
	rollingBackByItself := aborted.DeepCopy()
	rollingBackByItself.Status.Phase = v1alpha1.CanaryRollingBack
	byPerson := canaryAt(2, v1alpha1.BatchBaking, v1alpha1.CanaryRollingBack, asExpected)
	byPerson.Spec.Rollback = true
	completed := canaryAt(3, v1alpha1.BatchCompleted, v1alpha1.CanaryCompleted, asExpected)
	completedThenAborted := completed.DeepCopy()
	completedThenAborted.Spec.Rollback = true
	completedThenAborted.Status.Phase = v1alpha1.CanaryRolledBack
	deadline := canaryAt(2, v1alpha1.BatchUpgrading, v1alpha1.CanaryDegraded,
		cond(v1alpha1.ConditionDegraded, v1alpha1.ReasonProgressDeadlineExceeded, metav1.ConditionTrue),
		cond(v1alpha1.ConditionProgressing, v1alpha1.ReasonProgressDeadlineExceeded, metav1.ConditionFalse))

	for _, tc := range []struct {
		name string
		cn   *v1alpha1.Canary
		want map[string]string
	}{
		{"not started", canaryAt(0, "", ""), map[string]string{}},
		{"step 2 upgrading", canaryAt(2, v1alpha1.BatchUpgrading, v1alpha1.CanaryProgressing, progressing, asExpected),
			map[string]string{OnStepStarted: "step 2 at 2026-11-26T10:01:00Z"}},
		{"step 1 waits for promotion", canaryAt(1, v1alpha1.BatchPaused, v1alpha1.CanaryPaused,
			cond(v1alpha1.ConditionProgressing, v1alpha1.ReasonWaitingForPromotion, metav1.ConditionFalse), asExpected),
			map[string]string{OnStepStarted: "step 1 at 2026-11-26T10:00:00Z", OnPaused: "step 1 at 2026-11-26T10:00:00Z"}},
		{"paused by spec is not waiting for promotion", canaryAt(1, v1alpha1.BatchUpgrading, v1alpha1.CanaryPaused,
			cond(v1alpha1.ConditionProgressing, v1alpha1.ReasonPausedBySpec, metav1.ConditionFalse), asExpected),
			map[string]string{OnStepStarted: "step 1 at 2026-11-26T10:00:00Z"}},
		{"inconclusive", canaryAt(2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused,
			cond(v1alpha1.ConditionProgressing, v1alpha1.ReasonAnalysisInconclusive, metav1.ConditionFalse), asExpected),
			map[string]string{OnStepStarted: "step 2 at 2026-11-26T10:01:00Z", OnAnalysisInconclusive: "step 2 at 2026-11-26T10:01:00Z"}},
		{"deadline exceeded", deadline,
			map[string]string{OnDeadlineExceeded: "ProgressDeadlineExceeded since 2026-11-26T10:01:00Z"}},
		{"contested", canaryAt(2, v1alpha1.BatchUpgrading, v1alpha1.CanaryDegraded,
			cond(v1alpha1.ConditionDegraded, v1alpha1.ReasonDeploymentContested, metav1.ConditionTrue)),
			map[string]string{OnContested: "DeploymentContested since 2026-11-26T10:01:00Z"}},
		{"rolling back by itself: not yet rolled back", rollingBackByItself, map[string]string{}},
		{"rolled back by itself", aborted, map[string]string{OnRolledBack: "AnalysisFailed at step 2 at 2026-11-26T10:01:00Z"}},
		{"aborted by a person", byPerson, map[string]string{OnAborted: "release at 2026-11-26T10:00:00Z"}},
		{"completed", completed, map[string]string{OnCompleted: "release at 2026-11-26T10:00:00Z"}},
		{"completed, then aborted", completedThenAborted, map[string]string{OnAborted: "release at 2026-11-26T10:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, f := range Fire(tc.cn) {
				got[f.Trigger.Name] = f.Occurrence
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("fired %v, want %v", got, tc.want)
			}
		})
	}
}

// A step started again (its template changed while it baked) is a new occurrence; the same
// state seen again is the same one.
func TestOccurrenceFollowsTheEvent(t *testing.T) {
	cn := canaryAt(2, v1alpha1.BatchUpgrading, v1alpha1.CanaryProgressing)
	tr, _ := TriggerNamed("step-started")
	a, _ := tr.Occurrence(cn)
	b, _ := tr.Occurrence(cn.DeepCopy())
	again := cn.DeepCopy()
	later := metav1.NewTime(t1.Add(time.Minute))
	again.Status.Batches[1].StartTime = &later
	c, _ := tr.Occurrence(again)
	if a != b || a == c {
		t.Errorf("occurrences %q, %q (same state), %q (step started again)", a, b, c)
	}
}

func TestTriggerNamed(t *testing.T) {
	for _, name := range []string{"paused", "on-paused"} {
		if tr, ok := TriggerNamed(name); !ok || tr.Name != OnPaused {
			t.Errorf("TriggerNamed(%q) = %q, %t", name, tr.Name, ok)
		}
	}
	if _, ok := TriggerNamed("on-sync-succeeded"); ok {
		t.Error("an unknown trigger was found")
	}
}
