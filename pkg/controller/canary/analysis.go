package canary

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// measured is one check's status after this sync's measurement, and when it measures next.
type measured struct {
	status v1alpha1.AnalysisCheckStatus
	next   time.Time
}

// measure takes the measurements that are due for the checks of the step the Canary's status
// says is baking (or paused with checks still measuring). It is the only part of a sync that
// talks to a provider (Prometheus, the Job API, the pod cache); the plan then judges what it
// measured (bake.go). A provider that cannot be built or reached counts as an error
// measurement: retried, then inconclusive, never a pass.
func (c *Controller) measure(ctx context.Context, cn *v1alpha1.Canary, view *analysisView, pods releasePods, now time.Time) map[string]measured {
	st := &cn.Status
	k := st.CurrentBatch
	if k < 1 || int(k) > len(st.Batches) || st.Abort != nil || cn.Spec.Rollback {
		return nil
	}
	out := map[string]measured{}
	// Background checks measure in every state of the release: between steps too.
	for _, cs := range st.BackgroundAnalysis {
		if m, ok := c.measureOne(ctx, cn, view.check(cs.Name), cs, "bg", pods, now); ok {
			out[backgroundKey+cs.Name] = m
		}
	}
	if s := st.Batches[k-1].State; s != v1alpha1.BatchBaking && s != v1alpha1.BatchPaused {
		return out
	}
	for _, cs := range st.Analysis {
		if m, ok := c.measureOne(ctx, cn, view.check(cs.Name), cs, fmt.Sprint(k), pods, now); ok {
			out[cs.Name] = m
		}
	}
	return out
}

// backgroundKey prefixes the names of background checks among a sync's measurements: a check
// may run in a step and in the background at once.
const backgroundKey = "background/"

// measureOne takes check's measurement if it is due; ok is false for a check that does not
// measure (decided, or an entry whose template is unresolved). run tells the runs of one check
// apart (the step's number, or "bg").
func (c *Controller) measureOne(ctx context.Context, cn *v1alpha1.Canary, check *v1alpha1.AnalysisCheck, cs v1alpha1.AnalysisCheckStatus, run string, pods releasePods, now time.Time) (measured, bool) {
	if check == nil || check.TemplateRef != nil || (cs.Phase != v1alpha1.AnalysisRunning && cs.Phase != "") {
		return measured{}, false
	}
	started := cn.CreationTimestamp
	if cs.StartedAt != nil {
		started = *cs.StartedAt
	}
	var p analysis.Provider
	var err error
	if check.Provider.PodHealth != nil {
		p, err = c.podHealth(ctx, cn.Namespace, pods) // release_pods.go: the new pods of any mode
	} else {
		p, err = c.analysisEnv.Provider(check, analysis.Target{
			Namespace: cn.Namespace,
			Owner:     *metav1.NewControllerRef(cn, controllerKind),
			Run:       fmt.Sprintf("%s-%s-%s-%d", cn.Name, check.Name, run, started.Unix()),
		})
	}
	if err != nil {
		p = failing{err}
	}
	status, v := c.runner.Step(ctx, check, &cs, p, now)
	return measured{status: status, next: v.NextMeasurement}, true
}

// canaryPods selects the canary Deployment's pods among the agent's; nil without a Deployment.
func canaryPods(d *appsv1.Deployment) labels.Selector {
	if d == nil || d.Spec.Selector == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil
	}
	return sel
}

func findCheck(checks []v1alpha1.AnalysisCheck, name string) *v1alpha1.AnalysisCheck {
	for i := range checks {
		if checks[i].Name == name {
			return &checks[i]
		}
	}
	return nil
}

// failing is a provider that could not be built: each measurement is its error.
type failing struct{ err error }

func (f failing) Measure(context.Context, int32) (any, error) { return nil, f.err }

// expectPods refuses a podHealth measurement that sees no pod while the canary Deployment
// wants some: its pods are not among those the agent watches (a canary Deployment created by
// an agent whose pod template did not carry the managed-by label yet), and no pod is not
// healthy pods.
type expectPods struct {
	analysis.Provider
	want int32
}

func (e expectPods) Measure(ctx context.Context, ordinal int32) (any, error) {
	v, err := e.Provider.Measure(ctx, ordinal)
	if counts, ok := v.(map[string]int64); ok && err == nil && counts["pods"] == 0 && e.want > 0 {
		return nil, fmt.Errorf("none of the %d canary pods is visible to the agent: their template lacks label %s=%s (change spec.canary.template once to roll them with it)",
			e.want, v1alpha1.LabelManagedBy, v1alpha1.ManagedByAgent)
	}
	return v, err
}
