package analysis

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// scripted returns its values (or errors) in order and counts the calls.
type scripted struct {
	out      []any
	ordinals []int32
}

func (s *scripted) Measure(_ context.Context, ordinal int32) (any, error) {
	s.ordinals = append(s.ordinals, ordinal)
	v := s.out[0]
	s.out = s.out[1:]
	if err, ok := v.(error); ok {
		return nil, err
	}
	return v, nil
}

func TestStep(t *testing.T) {
	down := errors.New("connection refused")
	prom := appsv1alpha1.AnalysisProvider{Prometheus: &appsv1alpha1.PrometheusProvider{Address: "http://x", Query: "q"}}
	for _, tc := range []struct {
		name      string
		check     appsv1alpha1.AnalysisCheck
		out       []any
		at        []time.Duration // times of the Step calls after t0
		want      []appsv1alpha1.AnalysisPhase
		wantMsg   string
		wantCalls int
	}{
		{
			name:  "passes after count good values",
			check: appsv1alpha1.AnalysisCheck{Interval: every(10 * time.Second), Count: i32(3), SuccessCondition: "result < 0.05", Provider: prom},
			out:   []any{0.01, 0.02, 0.03},
			at:    []time.Duration{0, 5 * time.Second, 10 * time.Second, 20 * time.Second},
			want:  []appsv1alpha1.AnalysisPhase{"Running", "Running", "Running", "Successful"},
			// the call at 5s is before the interval: no measurement.
			wantMsg: "3 of 3 measurements successful; last: 0.03", wantCalls: 3,
		},
		{
			name:    "fails on a bad value",
			check:   appsv1alpha1.AnalysisCheck{Interval: every(10 * time.Second), Count: i32(3), SuccessCondition: "result < 0.05", Provider: prom},
			out:     []any{0.01, 0.5},
			at:      []time.Duration{0, 10 * time.Second, 20 * time.Second},
			want:    []appsv1alpha1.AnalysisPhase{"Running", "Failed", "Failed"},
			wantMsg: "1 failed measurements, more than failureLimit 0; last: 0.5", wantCalls: 2,
		},
		{
			name:    "unreachable provider is retried, then inconclusive, never successful",
			check:   appsv1alpha1.AnalysisCheck{Interval: every(time.Second), ConsecutiveErrorLimit: i32(2), SuccessCondition: "result < 0.05", Provider: prom},
			out:     []any{down, down, down},
			at:      []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second},
			want:    []appsv1alpha1.AnalysisPhase{"Running", "Running", "Inconclusive", "Inconclusive"},
			wantMsg: "3 provider errors in a row, more than consecutiveErrorLimit 2: connection refused", wantCalls: 3,
		},
		{
			name:      "a condition that does not compile is an Error, without measuring",
			check:     appsv1alpha1.AnalysisCheck{SuccessCondition: "result <", Provider: prom},
			at:        []time.Duration{0},
			want:      []appsv1alpha1.AnalysisPhase{"Error"},
			wantMsg:   `successCondition "result <" does not compile`,
			wantCalls: 0,
		},
		{
			name:      "an in-flight measurement records nothing and is polled",
			check:     appsv1alpha1.AnalysisCheck{Provider: appsv1alpha1.AnalysisProvider{Job: &appsv1alpha1.JobProvider{}}},
			out:       []any{ErrInFlight, ErrInFlight, false},
			at:        []time.Duration{0, time.Second, 2 * time.Second},
			want:      []appsv1alpha1.AnalysisPhase{"Running", "Running", "Failed"},
			wantMsg:   "1 failed measurements, more than failureLimit 0; last: false",
			wantCalls: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRunner()
			if err != nil {
				t.Fatal(err)
			}
			p := &scripted{out: tc.out}
			st := &appsv1alpha1.AnalysisCheckStatus{}
			var v Verdict
			for i, at := range tc.at {
				before := st.DeepCopy()
				var next appsv1alpha1.AnalysisCheckStatus
				next, v = r.Step(context.Background(), &tc.check, st, p, t0.Add(at))
				if !equalStatus(before, st) {
					t.Fatalf("call %d changed the status it was given", i)
				}
				st = &next
				if v.Phase != tc.want[i] || st.Phase != v.Phase {
					t.Fatalf("call %d at %v: verdict %s, status %s, want %s (%s)", i, at, v.Phase, st.Phase, tc.want[i], v.Message)
				}
			}
			if !strings.Contains(st.Message, tc.wantMsg) {
				t.Errorf("message %q, want it to contain %q", st.Message, tc.wantMsg)
			}
			if len(p.ordinals) != tc.wantCalls {
				t.Errorf("%d measurements (ordinals %v), want %d", len(p.ordinals), p.ordinals, tc.wantCalls)
			}
		})
	}
}

func TestStepOrdinalsAndPoll(t *testing.T) {
	r, _ := NewRunner()
	check := &appsv1alpha1.AnalysisCheck{Interval: every(time.Minute), Count: i32(2), Provider: appsv1alpha1.AnalysisProvider{Job: &appsv1alpha1.JobProvider{}}}
	p := &scripted{out: []any{ErrInFlight, true, errors.New("forbidden"), ErrInFlight}}
	st := appsv1alpha1.AnalysisCheckStatus{}
	var v Verdict
	for _, at := range []time.Duration{0, time.Second, 61 * time.Second, 121 * time.Second} {
		st, v = r.Step(context.Background(), check, &st, p, t0.Add(at))
	}
	// in flight (1), done (1), error (2), retried with a new ordinal (3).
	if want := []int32{1, 1, 2, 3}; !slices.Equal(p.ordinals, want) {
		t.Errorf("ordinals %v, want %v", p.ordinals, want)
	}
	if !v.NextMeasurement.Equal(t0.Add(121*time.Second + InFlightPoll)) {
		t.Errorf("in flight: next measurement %v, want %v after the call", v.NextMeasurement, InFlightPoll)
	}
}

func equalStatus(a, b *appsv1alpha1.AnalysisCheckStatus) bool {
	return a.Phase == b.Phase && a.Count == b.Count && a.Errors == b.Errors && len(a.Measurements) == len(b.Measurements) && a.Message == b.Message
}
