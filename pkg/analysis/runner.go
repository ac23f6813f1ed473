package analysis

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// maxText bounds the value and message of a measurement kept in status (the schema's limit).
const maxText = 1024

// Runner steps checks: it holds the compiled conditions shared by every check it runs.
type Runner struct {
	compiler *Compiler
}

// NewRunner returns a Runner.
func NewRunner() (*Runner, error) {
	c, err := NewCompiler()
	if err != nil {
		return nil, err
	}
	return &Runner{compiler: c}, nil
}

// Step advances one check at time now and returns its new status (st is not changed) and the
// verdict. When a measurement is due, it measures through p, judges the value with the
// check's conditions and records it. A condition that does not compile decides the check as
// Error: the check is broken, not the release. A Running verdict's NextMeasurement, or
// InFlightPoll while a measurement is in flight, says when to call again.
func (r *Runner) Step(ctx context.Context, check *appsv1alpha1.AnalysisCheck, st *appsv1alpha1.AnalysisCheckStatus, p Provider, now time.Time) (appsv1alpha1.AnalysisCheckStatus, Verdict) {
	out := *st.DeepCopy()
	if out.StartedAt == nil {
		out = Start(check, now)
	}
	v := Assess(check, &out, now)
	if v.Decided() || now.Before(v.NextMeasurement) {
		return settle(out, v), v
	}
	conds, err := r.compiler.compileCheck(check)
	if err != nil {
		v = Verdict{Phase: appsv1alpha1.AnalysisError, Message: err.Error()}
		return settle(out, v), v
	}
	value, err := p.Measure(ctx, out.Count+out.Errors+1)
	if errors.Is(err, ErrInFlight) {
		v.NextMeasurement = now.Add(InFlightPoll)
		return settle(out, v), v
	}
	m := appsv1alpha1.AnalysisMeasurement{MeasuredAt: metav1.NewTime(now)}
	if err == nil {
		m.Value = clip(FormatValue(value))
		m.Phase, err = conds.judge(value)
	} else {
		m.Phase = appsv1alpha1.AnalysisError
	}
	if err != nil {
		m.Message = clip(err.Error())
	}
	Record(check, &out, m)
	v = Assess(check, &out, now)
	return settle(out, v), v
}

// settle writes the verdict into the status.
func settle(st appsv1alpha1.AnalysisCheckStatus, v Verdict) appsv1alpha1.AnalysisCheckStatus {
	st.Phase, st.Message = v.Phase, clip(v.Message)
	return st
}

func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	return s[:maxText-3] + "..."
}
