package analysis

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

const (
	// DefaultConsecutiveErrorLimit is the provider errors in a row retried before one counts
	// as an inconclusive measurement (Argo Rollouts' default too).
	DefaultConsecutiveErrorLimit = 4
	// errorRetry is the wait before retrying a provider error of a check without interval.
	errorRetry = 5 * time.Second
	// InFlightPoll is how soon to look again at a measurement that is still running (a Job).
	InFlightPoll = 5 * time.Second
)

// Verdict is what a check's status means now.
type Verdict struct {
	// Phase is Running until the check is decided.
	Phase appsv1alpha1.AnalysisPhase
	// Message explains a decided phase, e.g. the failing value and condition.
	Message string
	// NextMeasurement is when a Running check measures next (zero once decided).
	NextMeasurement time.Time
}

// Decided reports whether the check has its final phase.
func (v Verdict) Decided() bool { return v.Phase != appsv1alpha1.AnalysisRunning }

// Assess turns a check's measurements so far into a verdict at time now. It is pure.
//
//   - A decided phase in status (Successful, Failed, Inconclusive, Error) is final.
//   - More failed measurements than failureLimit: Failed.
//   - More inconclusive measurements than inconclusiveLimit: Inconclusive. Provider errors
//     beyond consecutiveErrorLimit in a row count as one inconclusive measurement (Record).
//   - count measurements taken (count defaults to 1 without interval): Successful when at
//     least one measurement succeeded, else Inconclusive.
//   - Otherwise Running: the next measurement is due an interval after the last one (after a
//     provider error: an interval, or 5s without one), or at once if there is none yet.
func Assess(check *appsv1alpha1.AnalysisCheck, st *appsv1alpha1.AnalysisCheckStatus, now time.Time) Verdict {
	switch st.Phase {
	case appsv1alpha1.AnalysisSuccessful, appsv1alpha1.AnalysisFailed, appsv1alpha1.AnalysisInconclusive, appsv1alpha1.AnalysisError:
		return Verdict{Phase: st.Phase, Message: st.Message}
	}
	if st.Failed > check.FailureLimit {
		return Verdict{Phase: appsv1alpha1.AnalysisFailed, Message: fmt.Sprintf(
			"%d failed measurements, more than failureLimit %d%s", st.Failed, check.FailureLimit, lastOf(st, appsv1alpha1.AnalysisFailed))}
	}
	if st.Inconclusive > check.InconclusiveLimit {
		return Verdict{Phase: appsv1alpha1.AnalysisInconclusive, Message: fmt.Sprintf(
			"%d inconclusive measurements, more than inconclusiveLimit %d%s", st.Inconclusive, check.InconclusiveLimit, lastOf(st, appsv1alpha1.AnalysisInconclusive))}
	}
	if n := effectiveCount(check); n > 0 && st.Count >= n {
		return Conclude(st)
	}
	return Verdict{Phase: appsv1alpha1.AnalysisRunning, NextMeasurement: nextMeasurement(check, st, now)}
}

// Conclude decides a check whose measuring ends within its limits: when its count is reached,
// or when the step it runs in ends for a check that measures for as long as the step bakes.
// It is Successful when at least one measurement succeeded and Inconclusive otherwise.
func Conclude(st *appsv1alpha1.AnalysisCheckStatus) Verdict {
	if st.Successful == 0 {
		return Verdict{Phase: appsv1alpha1.AnalysisInconclusive, Message: fmt.Sprintf(
			"no successful measurement in %d (%d failed, %d inconclusive)", st.Count, st.Failed, st.Inconclusive)}
	}
	return Verdict{Phase: appsv1alpha1.AnalysisSuccessful, Message: fmt.Sprintf(
		"%d of %d measurements successful%s", st.Successful, st.Count, lastOf(st, appsv1alpha1.AnalysisSuccessful))}
}

// effectiveCount is the number of measurements that decides the check, 0 for none (measure
// until the step ends).
func effectiveCount(check *appsv1alpha1.AnalysisCheck) int32 {
	switch {
	case check.Count != nil:
		return *check.Count
	case check.Interval == nil:
		return 1
	}
	return 0
}

func nextMeasurement(check *appsv1alpha1.AnalysisCheck, st *appsv1alpha1.AnalysisCheckStatus, now time.Time) time.Time {
	if len(st.Measurements) == 0 {
		if st.StartedAt != nil {
			return st.StartedAt.Time
		}
		return now
	}
	last := st.Measurements[len(st.Measurements)-1]
	wait := errorRetry
	if check.Interval != nil {
		wait = check.Interval.Duration
	}
	return last.MeasuredAt.Add(wait)
}

// lastOf describes the latest measurement of the given phase, for a verdict's message.
func lastOf(st *appsv1alpha1.AnalysisCheckStatus, phase appsv1alpha1.AnalysisPhase) string {
	for i := len(st.Measurements) - 1; i >= 0; i-- {
		if m := st.Measurements[i]; m.Phase == phase {
			switch {
			case m.Message == "":
				return "; last: " + m.Value
			case m.Value == "":
				return "; last: " + m.Message
			}
			return "; last: " + m.Value + " (" + m.Message + ")"
		}
	}
	return ""
}

// Record adds one measurement to the status: the counters and the latest measurements (at
// most MaxAnalysisMeasurements). A provider error (phase Error) only counts towards
// consecutiveErrors until there are more than consecutiveErrorLimit in a row; that one is
// recorded as an inconclusive measurement and the run of errors starts again.
func Record(check *appsv1alpha1.AnalysisCheck, st *appsv1alpha1.AnalysisCheckStatus, m appsv1alpha1.AnalysisMeasurement) {
	if m.Phase == appsv1alpha1.AnalysisError {
		st.Errors++
		st.ConsecutiveErrors++
		limit := int32(DefaultConsecutiveErrorLimit)
		if check.ConsecutiveErrorLimit != nil {
			limit = *check.ConsecutiveErrorLimit
		}
		if st.ConsecutiveErrors <= limit {
			appendMeasurement(st, m)
			return
		}
		m.Phase = appsv1alpha1.AnalysisInconclusive
		m.Message = fmt.Sprintf("%d provider errors in a row, more than consecutiveErrorLimit %d: %s", st.ConsecutiveErrors, limit, m.Message)
	}
	st.ConsecutiveErrors = 0
	st.Count++
	switch m.Phase {
	case appsv1alpha1.AnalysisSuccessful:
		st.Successful++
	case appsv1alpha1.AnalysisFailed:
		st.Failed++
	default:
		st.Inconclusive++
	}
	appendMeasurement(st, m)
}

func appendMeasurement(st *appsv1alpha1.AnalysisCheckStatus, m appsv1alpha1.AnalysisMeasurement) {
	st.Measurements = append(st.Measurements, m)
	if over := len(st.Measurements) - appsv1alpha1.MaxAnalysisMeasurements; over > 0 {
		st.Measurements = append([]appsv1alpha1.AnalysisMeasurement(nil), st.Measurements[over:]...)
	}
}

// Start returns the status of a check that starts now.
func Start(check *appsv1alpha1.AnalysisCheck, now time.Time) appsv1alpha1.AnalysisCheckStatus {
	t := metav1.NewTime(now)
	return appsv1alpha1.AnalysisCheckStatus{Name: check.Name, Phase: appsv1alpha1.AnalysisRunning, StartedAt: &t}
}
