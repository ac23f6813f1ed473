package workload

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// stepsRelease is 10 replicas in steps 1 (untimed pause), 50% (timed pause, a check), 100%,
// at step k in state.
func stepsRelease(k int32, state v1alpha1.BatchState) *v1alpha1.Canary {
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop", Generation: 1}}
	c.Spec.Replicas = 10
	c.Spec.Steps = []v1alpha1.CanaryStep{
		{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{}},
		{Replicas: intstr.FromString("50%"), Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: time.Minute}}},
		{Replicas: intstr.FromString("80%")},
	}
	c.Status.ObservedGeneration, c.Status.CurrentBatch = 1, k
	for i := int32(1); i <= 4; i++ {
		b := v1alpha1.CanaryBatchStatus{Index: i, State: v1alpha1.BatchPending}
		switch {
		case i < k:
			b.State = v1alpha1.BatchCompleted
		case i == k:
			b.State = state
		}
		c.Status.Batches = append(c.Status.Batches, b)
	}
	return c
}

func TestCanaryBatchCountCountsTheFinalStep(t *testing.T) {
	if n := CanaryBatchCount(stepsRelease(1, v1alpha1.BatchUpgrading)); n != 4 {
		t.Errorf("%d steps, want 4 (1, 50%%, 80%% and the final 100%%)", n)
	}
}

// A promote approves a step that waits for a person, or one whose timed pause runs; never a
// step still making its pods available, nor one baking only its checks.
func TestPromotableBatch(t *testing.T) {
	for _, tc := range []struct {
		k     int32
		state v1alpha1.BatchState
		want  int32
	}{
		{1, v1alpha1.BatchPaused, 1},
		{1, v1alpha1.BatchUpgrading, 0},
		{2, v1alpha1.BatchBaking, 2},
		{2, v1alpha1.BatchUpgrading, 0},
		{3, v1alpha1.BatchBaking, 0}, // no pause: only checks bake it
		{4, v1alpha1.BatchUpgrading, 0},
	} {
		c := stepsRelease(tc.k, tc.state)
		c.Status.Phase = v1alpha1.CanaryProgressing
		if tc.state == v1alpha1.BatchPaused {
			c.Status.Phase = v1alpha1.CanaryPaused
		}
		if got := PromotableBatch(c); got != tc.want {
			t.Errorf("step %d %s: promotable %d, want %d", tc.k, tc.state, got, tc.want)
		}
	}
}

func TestCanaryStepDetail(t *testing.T) {
	defer func(f func() time.Time) { Now = f }(Now)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	Now = func() time.Time { return t0 }
	c := stepsRelease(2, v1alpha1.BatchBaking)
	end := metav1.NewTime(t0.Add(95 * time.Second))
	c.Status.Batches[1].PauseEndTime = &end
	c.Status.Analysis = []v1alpha1.AnalysisCheckStatus{{Name: "health", Phase: v1alpha1.AnalysisRunning, Count: 1,
		Measurements: []v1alpha1.AnalysisMeasurement{{Phase: v1alpha1.AnalysisSuccessful, Value: "{pods:5}"}}}}
	got := canaryStepDetail(c, nil)
	// The name (the tree's first column) is short; the line status prints joins all three.
	want := []stepDetail{
		{"pause", "", "1m35s left (until 2026-03-01T12:01:35Z; promote skips it)"},
		{"check health", "Running", "1 measured (0 failed, 0 inconclusive, 0 errors), last {pods:5}"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("detail %q, want %q", got, want)
	}
	if line := got[1].String(); line != "check health Running: 1 measured (0 failed, 0 inconclusive, 0 errors), last {pods:5}" {
		t.Errorf("line %q", line)
	}
	c.Spec.ApprovedBatch = 2
	if got := canaryStepDetail(c, nil); got[0].String() != "pause: over" {
		t.Errorf("after a promote: %q", got[0])
	}
}

// A check from a template names it, so that a person knows where to change it.
func TestCheckDetailNamesItsTemplate(t *testing.T) {
	got := checkDetail(v1alpha1.AnalysisCheckStatus{Name: "slo.error-ratio", Template: "ClusterAnalysisTemplate/error-rate", Phase: v1alpha1.AnalysisRunning}).String()
	if !strings.HasPrefix(got, "check slo.error-ratio (ClusterAnalysisTemplate/error-rate) Running") {
		t.Errorf("got %q", got)
	}
	if got := checkDetail(v1alpha1.AnalysisCheckStatus{Name: "pods", Phase: v1alpha1.AnalysisRunning}).String(); !strings.HasPrefix(got, "check pods Running") {
		t.Errorf("an inline check names no template: %q", got)
	}
}
