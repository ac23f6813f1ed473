package workload

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	deploymentutil "k8s.io/kubectl/pkg/util/deployment"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Now is the clock a timed pause's remaining time is measured with (tests fix it).
var Now = time.Now

// stepWord is what a Canary's release is made of in messages: "step" for spec.steps, "batch"
// for the shorthands (batches, batchSizes), as the spec says it.
func stepWord(c *v1alpha1.Canary) string {
	if len(c.Spec.Steps) > 0 || c.Spec.BlueGreen != nil {
		return "step"
	}
	return "batch"
}

// stepDetail is one thing the current step of a Canary waits for: its name ("pause", "check
// error-rate"), its verdict ("Running"; none for a pause) and what else there is to say of it.
type stepDetail struct{ name, verdict, info string }

// String is the detail as one line: "check error-rate Running: 2 measured (0 failed, …)".
func (d stepDetail) String() string {
	if d.verdict == "" {
		return d.name + ": " + d.info
	}
	return d.name + " " + d.verdict + ": " + d.info
}

// canaryStepDetail describes what the current step of a Canary waits for: the rest of its
// timed pause, each check with its verdict and last values, and (with a fleet f) the member
// clusters out of reach that hold it.
func canaryStepDetail(c *v1alpha1.Canary, f *fleet) []stepDetail {
	st := c.Status
	var details []stepDetail
	rollingBack := c.Spec.Rollback || st.Phase == v1alpha1.CanaryRollingBack || st.Phase == v1alpha1.CanaryRolledBack
	for _, b := range st.Batches {
		if rollingBack {
			break // no pause is running
		}
		if b.Index != st.CurrentBatch || b.PauseEndTime == nil || b.State == v1alpha1.BatchCompleted {
			continue
		}
		if left := b.PauseEndTime.Sub(Now()).Round(time.Second); left > 0 && c.Spec.ApprovedBatch < b.Index {
			details = append(details, stepDetail{"pause", "", fmt.Sprintf("%s left (until %s; promote skips it)", left, b.PauseEndTime.UTC().Format(time.RFC3339))})
		} else {
			details = append(details, stepDetail{"pause", "", "over"})
		}
	}
	for _, a := range st.Analysis {
		details = append(details, checkDetail(a))
	}
	if f != nil && !rollingBack {
		details = append(details, f.heldBy(c, st.CurrentBatch)...) // fleet.go
	}
	return details
}

// checkDetail is one check's state: "check error-rate" (with the template it came from, if
// any), "Running" and "2 measured (0 failed, …),
// last 0.01, 0.02".
func checkDetail(a v1alpha1.AnalysisCheckStatus) stepDetail {
	name := "check " + a.Name
	if a.Template != "" {
		name += " (" + a.Template + ")"
	}
	d := stepDetail{name: name, verdict: orDefault(string(a.Phase), "Pending"),
		info: fmt.Sprintf("%d measured (%d failed, %d inconclusive, %d errors)", a.Count, a.Failed, a.Inconclusive, a.Errors)}
	if vals := lastValues(a.Measurements, 3); vals != "" {
		d.info += ", last " + vals
	}
	if a.Message != "" && a.Phase != v1alpha1.AnalysisRunning {
		d.info += " — " + a.Message
	}
	return d
}

// lastValues lists the values of the last n measurements, oldest first.
func lastValues(ms []v1alpha1.AnalysisMeasurement, n int) string {
	var vals []string
	for _, m := range ms[max(0, len(ms)-n):] {
		v := m.Value
		if v == "" {
			v = string(m.Phase)
		}
		vals = append(vals, v)
	}
	return strings.Join(vals, ", ")
}

// abortLine says why a release rolled back by itself, "" when it did not.
func abortLine(c *v1alpha1.Canary) string {
	a := c.Status.Abort
	if a == nil || a.Retries < c.Spec.Retries {
		return ""
	}
	s := fmt.Sprintf("aborted at %s %d (%s", stepWord(c), a.Step, a.Reason)
	if a.Check != "" {
		s += ", check " + a.Check
	}
	return s + "): " + a.Message + "; `kubectl workload retry` starts it again"
}

// PromotableBatch is the step a promote approves: the current one when it waits for a person
// (Paused: an untimed pause or an inconclusive check) or runs a timed pause (Baking with a
// pause, which a promote ends early); 0 otherwise.
func PromotableBatch(c *v1alpha1.Canary) int32 {
	if k := WaitingBatch(c); k > 0 {
		return k
	}
	k := c.Status.CurrentBatch
	steps, err := v1alpha1.CanarySteps(&c.Spec)
	if k < 1 || err != nil || int(k) > len(steps) || steps[k-1].Pause == nil {
		return 0
	}
	for _, b := range c.Status.Batches {
		if b.Index == k && b.State == v1alpha1.BatchBaking {
			return k
		}
	}
	return 0
}

// deploymentInfo is what the tree says of a Canary's Deployment: its role, the image of each
// container and its revision (the Deployment controller's annotation).
func deploymentInfo(role string, d *appsv1.Deployment) string {
	var images []string
	for _, c := range d.Spec.Template.Spec.Containers {
		images = append(images, c.Name+"="+c.Image)
	}
	info := role + ", " + strings.Join(images, ",")
	if rev := d.Annotations[deploymentutil.RevisionAnnotation]; rev != "" {
		info += ", revision " + rev
	}
	return info
}
