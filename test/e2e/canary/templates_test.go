package canary

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// errorRateTemplate is a ClusterAnalysisTemplate of the error-rate check, its limit an argument
// without a default.
func errorRateTemplate(t *testing.T, e *env, name, address string) {
	t.Helper()
	tpl := &v1alpha1.ClusterAnalysisTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.AnalysisTemplateSpec{
			Args: []v1alpha1.AnalysisArg{{Name: "max"}},
			Checks: []v1alpha1.AnalysisCheck{{
				Name: "error-rate", Interval: &metav1.Duration{Duration: time.Second}, Count: ptr.To[int32](3),
				SuccessCondition: "result.size() == 1 && result[0] < {{args.max}}",
				FailureCondition: "result.size() == 1 && result[0] >= {{args.max}}",
				Provider:         v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: address, Query: errorRatio}},
			}},
		},
	}
	client := e.Apps.AppsV1alpha1().ClusterAnalysisTemplates()
	e2eenv.Create(t, e.Ctx, client, tpl)
	t.Cleanup(func() { _ = client.Delete(e.Ctx, name, metav1.DeleteOptions{}) })
}

func sloEntry(template string, args ...v1alpha1.AnalysisArgValue) func(*v1alpha1.CanarySpec) {
	return withChecks(v1alpha1.AnalysisCheck{Name: "slo",
		TemplateRef: &v1alpha1.AnalysisTemplateRef{Kind: v1alpha1.KindClusterAnalysisTemplate, Name: template}, Args: args})
}

func maxArg(v string) v1alpha1.AnalysisArgValue {
	return v1alpha1.AnalysisArgValue{Name: "max", Value: &v}
}

// A template that does not exist, or an argument left unset, holds the release at its step with
// a condition naming it; it never passes. Creating the template lets it go on.
func TestUnresolvedTemplateWaits(t *testing.T) {
	address := startPrometheus(t, 0.01)
	for _, tc := range []struct {
		name, reason, message string
		args                  []v1alpha1.AnalysisArgValue
		createTemplate        bool
	}{
		{"missing-template", v1alpha1.ReasonAnalysisTemplateNotFound, "not found", []v1alpha1.AnalysisArgValue{maxArg("0.5")}, false},
		{"unset-argument", v1alpha1.ReasonArgumentUnset, "argument max has no value", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			template := "error-rate-" + e.NS
			if tc.createTemplate {
				errorRateTemplate(t, e, template, address)
			}
			e.createSteps("nginx:1.27", sloEntry(template, tc.args...), step(intstr.FromInt32(2), nil, "slo"))
			c := e.waitCanary("condition AnalysisResolved False", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
				r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionAnalysisResolved)
				return r != nil && r.Status == metav1.ConditionFalse && len(c.Status.Batches) > 0 && c.Status.Batches[0].State == v1alpha1.BatchBaking
			})
			r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionAnalysisResolved)
			if r.Reason != tc.reason || !strings.Contains(r.Message, tc.message) || !strings.Contains(r.Message, template) {
				t.Fatalf("AnalysisResolved %+v: want reason %s naming %s and %q", r, tc.reason, template, tc.message)
			}
			// Waiting, not passing: the step still bakes some seconds later.
			time.Sleep(3 * time.Second)
			if c := e.canary(); c.Status.Phase == v1alpha1.CanaryCompleted || c.Status.Batches[0].State != v1alpha1.BatchBaking {
				t.Fatalf("the release moved on with its check unresolved\n%s", describe(c))
			}
			if !tc.createTemplate {
				errorRateTemplate(t, e, template, address)
				e.waitPhase(v1alpha1.CanaryCompleted)
			}
		})
	}
}

// A background check runs beside steps that have no check of their own (so only it can fail
// the release): a canary whose containers keep restarting is caught and rolled back by itself.
// That it measures between steps too is pinned by the unit test
// TestBackgroundCheckFailsTheReleaseBetweenSteps.
func TestBackgroundCheckFailsTheRelease(t *testing.T) {
	e := setup(t)
	e.createSteps("example.com/checkout:restarting", func(s *v1alpha1.CanarySpec) {
		s.Analysis = []v1alpha1.AnalysisCheck{{Name: "health", Interval: &metav1.Duration{Duration: 2 * time.Second},
			Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{}}}}
		s.BackgroundAnalysis = &v1alpha1.CanaryBackgroundAnalysis{Analysis: []string{"health"}}
	}, step(intstr.FromInt32(2), pauseFor(2*time.Second)), step(intstr.FromInt32(4), pauseFor(2*time.Second)),
		step(intstr.FromInt32(6), pauseFor(2*time.Second)))
	c := e.waitRolledBackBy(v1alpha1.ReasonAnalysisFailed)
	if a := c.Status.Abort; a.Check != "health" || !strings.Contains(a.Message, "background check health failed") || !strings.Contains(a.Message, "restarts:") {
		t.Errorf("abort %+v", a)
	}
	if bg := c.Status.BackgroundAnalysis; len(bg) != 1 || bg[0].Phase != v1alpha1.AnalysisFailed {
		t.Errorf("background analysis %+v", bg)
	}
}
