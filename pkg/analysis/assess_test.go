package analysis

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func i32(v int32) *int32 { return &v }

func every(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

// measured builds a Running status from measurements one second apart starting at t0.
func measured(phases ...appsv1alpha1.AnalysisPhase) *appsv1alpha1.AnalysisCheckStatus {
	st := appsv1alpha1.AnalysisCheckStatus{Name: "c", Phase: appsv1alpha1.AnalysisRunning, StartedAt: &metav1.Time{Time: t0}}
	check := &appsv1alpha1.AnalysisCheck{ConsecutiveErrorLimit: i32(100)}
	for i, p := range phases {
		Record(check, &st, appsv1alpha1.AnalysisMeasurement{Phase: p, Value: string(p), MeasuredAt: metav1.NewTime(t0.Add(time.Duration(i) * time.Second))})
	}
	return &st
}

const (
	ok   = appsv1alpha1.AnalysisSuccessful
	bad  = appsv1alpha1.AnalysisFailed
	inc  = appsv1alpha1.AnalysisInconclusive
	errm = appsv1alpha1.AnalysisError
)

func TestAssess(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name     string
		check    appsv1alpha1.AnalysisCheck
		st       *appsv1alpha1.AnalysisCheckStatus
		want     appsv1alpha1.AnalysisPhase
		wantMsg  string
		wantNext time.Time
	}{
		{name: "nothing measured: due at start", check: appsv1alpha1.AnalysisCheck{}, st: measured(), want: appsv1alpha1.AnalysisRunning, wantNext: t0},
		{name: "one measurement without interval decides", check: appsv1alpha1.AnalysisCheck{}, st: measured(ok), want: ok, wantMsg: "1 of 1 measurements successful; last: Successful"},
		{name: "first failure fails with failureLimit 0", check: appsv1alpha1.AnalysisCheck{Interval: every(time.Minute), Count: i32(5)}, st: measured(ok, bad), want: bad, wantMsg: "1 failed measurements, more than failureLimit 0; last: Failed"},
		{name: "failures within failureLimit keep running", check: appsv1alpha1.AnalysisCheck{Interval: every(time.Minute), Count: i32(5), FailureLimit: 2}, st: measured(bad, ok, bad), want: appsv1alpha1.AnalysisRunning, wantNext: t0.Add(2*time.Second + time.Minute)},
		{name: "one failure beyond failureLimit fails", check: appsv1alpha1.AnalysisCheck{Interval: every(time.Minute), Count: i32(5), FailureLimit: 2}, st: measured(bad, ok, bad, bad), want: bad, wantMsg: "3 failed measurements, more than failureLimit 2"},
		{name: "inconclusive beyond its limit", check: appsv1alpha1.AnalysisCheck{Interval: every(time.Minute), Count: i32(5), InconclusiveLimit: 1}, st: measured(inc, ok, inc), want: inc, wantMsg: "2 inconclusive measurements, more than inconclusiveLimit 1"},
		{name: "count reached within limits passes", check: appsv1alpha1.AnalysisCheck{Interval: every(time.Minute), Count: i32(3), FailureLimit: 1}, st: measured(ok, bad, ok), want: ok, wantMsg: "2 of 3 measurements successful"},
		{name: "count reached with no success is inconclusive", check: appsv1alpha1.AnalysisCheck{Interval: every(time.Minute), Count: i32(2), FailureLimit: 1, InconclusiveLimit: 1}, st: measured(bad, inc), want: inc, wantMsg: "no successful measurement in 2"},
		{name: "interval without count runs on", check: appsv1alpha1.AnalysisCheck{Interval: every(time.Minute)}, st: measured(ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok), want: appsv1alpha1.AnalysisRunning, wantNext: t0.Add(11*time.Second + time.Minute)},
		{name: "errors do not count towards count", check: appsv1alpha1.AnalysisCheck{Interval: every(time.Minute), Count: i32(2)}, st: measured(ok, errm, errm), want: appsv1alpha1.AnalysisRunning, wantNext: t0.Add(2*time.Second + time.Minute)},
		{name: "error retried after 5s without interval", check: appsv1alpha1.AnalysisCheck{}, st: measured(errm), want: appsv1alpha1.AnalysisRunning, wantNext: t0.Add(5 * time.Second)},
		{name: "a decided phase is final", check: appsv1alpha1.AnalysisCheck{}, st: &appsv1alpha1.AnalysisCheckStatus{Phase: appsv1alpha1.AnalysisError, Message: "broken"}, want: appsv1alpha1.AnalysisError, wantMsg: "broken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Assess(&tc.check, tc.st, now)
			if v.Phase != tc.want || !strings.Contains(v.Message, tc.wantMsg) || !v.NextMeasurement.Equal(tc.wantNext) {
				t.Errorf("got %+v\nwant phase %s, message containing %q, next %v", v, tc.want, tc.wantMsg, tc.wantNext)
			}
			if v.Decided() != (tc.want != appsv1alpha1.AnalysisRunning) {
				t.Errorf("Decided() = %v for %s", v.Decided(), v.Phase)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	check := &appsv1alpha1.AnalysisCheck{ConsecutiveErrorLimit: i32(2)}
	st := &appsv1alpha1.AnalysisCheckStatus{}
	steps := []struct {
		phase     appsv1alpha1.AnalysisPhase
		recorded  appsv1alpha1.AnalysisPhase
		counts    [6]int32 // count, successful, failed, inconclusive, errors, consecutiveErrors
		msgPrefix string
	}{
		{ok, ok, [6]int32{1, 1, 0, 0, 0, 0}, ""},
		{errm, errm, [6]int32{1, 1, 0, 0, 1, 1}, "refused"},
		{errm, errm, [6]int32{1, 1, 0, 0, 2, 2}, "refused"},
		{errm, inc, [6]int32{2, 1, 0, 1, 3, 0}, "3 provider errors in a row, more than consecutiveErrorLimit 2: refused"},
		{errm, errm, [6]int32{2, 1, 0, 1, 4, 1}, "refused"},
		{bad, bad, [6]int32{3, 1, 1, 1, 4, 0}, ""},
	}
	for i, s := range steps {
		m := appsv1alpha1.AnalysisMeasurement{Phase: s.phase}
		if s.phase == errm {
			m.Message = "refused"
		}
		Record(check, st, m)
		got := [6]int32{st.Count, st.Successful, st.Failed, st.Inconclusive, st.Errors, st.ConsecutiveErrors}
		last := st.Measurements[len(st.Measurements)-1]
		if got != s.counts || last.Phase != s.recorded || last.Message != s.msgPrefix {
			t.Fatalf("step %d: counts %v last %s %q; want %v %s %q", i, got, last.Phase, last.Message, s.counts, s.recorded, s.msgPrefix)
		}
	}
	for i := 0; i < 20; i++ {
		Record(check, st, appsv1alpha1.AnalysisMeasurement{Phase: ok, Value: string(rune('a' + i))})
	}
	if n := len(st.Measurements); n != appsv1alpha1.MaxAnalysisMeasurements || st.Measurements[n-1].Value != "t" || st.Measurements[0].Value != "k" {
		t.Errorf("kept %d measurements from %q to %q, want the latest 10 from k to t", n, st.Measurements[0].Value, st.Measurements[n-1].Value)
	}
	if st.Count != 23 || st.Successful != 21 {
		t.Errorf("count %d successful %d, want 23 and 21: counters cover every measurement, not just those kept", st.Count, st.Successful)
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{0.0125, "0.0125"},
		{[]float64{0.5, 2}, "[0.5,2]"},
		{[]float64{}, "[]"},
		{true, "true"},
		{map[string]int64{"pods": 3, "notReady": 1}, "{notReady:1,pods:3}"},
	} {
		if got := FormatValue(tc.v); got != tc.want {
			t.Errorf("FormatValue(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
