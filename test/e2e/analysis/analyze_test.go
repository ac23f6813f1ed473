package analysis

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
)

// errorRateTemplate is a ClusterAnalysisTemplate of the error ratio: below {{args.max}} passes,
// at or above {{args.fail}} (default 0.5) fails, in between is inconclusive.
func errorRateTemplate(name, address string) *v1alpha1.ClusterAnalysisTemplate {
	return &v1alpha1.ClusterAnalysisTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.AnalysisTemplateSpec{
			Args: []v1alpha1.AnalysisArg{{Name: "max"}, {Name: "fail", Value: ptr.To("0.5")}},
			Checks: []v1alpha1.AnalysisCheck{{
				Name: "error-rate", Interval: &metav1.Duration{Duration: time.Second}, Count: ptr.To[int32](3),
				SuccessCondition: "result.size() == 1 && result[0] < {{args.max}}",
				FailureCondition: "result.size() == 1 && result[0] >= {{args.fail}}",
				Provider:         v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: address, Query: errorRatio}},
			}},
		},
	}
}

// createTemplate creates a ClusterAnalysisTemplate, deleted when the test ends.
func createTemplate(t *testing.T, e *e2eenv.Env, tpl *v1alpha1.ClusterAnalysisTemplate) *v1alpha1.ClusterAnalysisTemplate {
	t.Helper()
	client := e.Apps.AppsV1alpha1().ClusterAnalysisTemplates()
	created := e2eenv.Create(t, e.Ctx, client, tpl)
	t.Cleanup(func() { _ = client.Delete(e.Ctx, tpl.Name, metav1.DeleteOptions{}) })
	return created
}

// kubectl workload analyze, the built plugin run through kubectl against the live cluster and
// the real Prometheus at an error ratio of 10%: a template of the cluster and a Canary's checks
// are measured once, the value printed, the exit code 0 (pass), 1 (fail) or 2 (inconclusive);
// the template, the Canary and the namespace are left as they were.
func TestAnalyzeVerb(t *testing.T) {
	_, prom := startApp(t, 0.1)
	e := e2eenv.Setup(t)
	name := "analyze-" + e.NS
	tpl := createTemplate(t, e, errorRateTemplate(name, prom.URL))
	canary := e2eenv.Create(t, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout"},
		Spec: v1alpha1.CanarySpec{
			Replicas:  2,
			StableRef: v1alpha1.StableRef{Name: "checkout"},
			Canary: v1alpha1.CanaryTarget{Name: "checkout-canary", Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "checkout"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}},
			Analysis: []v1alpha1.AnalysisCheck{{Name: "slo",
				TemplateRef: &v1alpha1.AnalysisTemplateRef{Kind: v1alpha1.KindClusterAnalysisTemplate, Name: name},
				Args:        []v1alpha1.AnalysisArgValue{{Name: "max", Value: ptr.To("0.5")}, {Name: "fail", Value: ptr.To("0.9")}}}},
			Steps: []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1), Analysis: []string{"slo"}}},
		},
	})
	run := pluginexec.New(t, e.Ctx, e.Cluster.Kubeconfig, e.NS)
	for _, tc := range []struct {
		args     []string
		code     int
		verdict  string
		template string
	}{
		{[]string{"catpl/" + name, "--arg", "max=0.5"}, 0, "Successful", "ClusterAnalysisTemplate/" + name},
		{[]string{"catpl/" + name, "--arg", "max=0.05", "--arg", "fail=0.08"}, 1, "Failed", "ClusterAnalysisTemplate/" + name},
		{[]string{"catpl/" + name, "--arg", "max=0.05"}, 2, "Inconclusive", "ClusterAnalysisTemplate/" + name},
		{[]string{"canary/checkout"}, 0, "Successful", "ClusterAnalysisTemplate/" + name},
	} {
		r := run.Run(append([]string{"analyze"}, tc.args...)...)
		if r.Code != tc.code {
			t.Errorf("analyze %v: exit %d, want %d\n%s%s", tc.args, r.Code, tc.code, r.Out, r.Err)
		}
		row := ""
		for _, l := range strings.Split(r.Out, "\n") {
			if strings.Contains(l, "error-rate") {
				row = l
			}
		}
		if f := strings.Fields(row); len(f) < 4 || f[1] != tc.template || f[2] != "[0.1]" || f[3] != tc.verdict {
			t.Errorf("analyze %v: row %q, want the template %s, the measured [0.1] and %s", tc.args, row, tc.template, tc.verdict)
		}
	}
	// Nothing changed: the objects it read, and nothing created in the namespace.
	if got := e2eenv.Get(t, e.Ctx, e.Apps.AppsV1alpha1().ClusterAnalysisTemplates(), name); got.ResourceVersion != tpl.ResourceVersion {
		t.Errorf("the template changed: resourceVersion %s, was %s", got.ResourceVersion, tpl.ResourceVersion)
	}
	if got := e2eenv.Get(t, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), "checkout"); got.ResourceVersion != canary.ResourceVersion {
		t.Errorf("the Canary changed: resourceVersion %s, was %s", got.ResourceVersion, canary.ResourceVersion)
	}
	jobs, err := e.Kube.BatchV1().Jobs(e.NS).List(e.Ctx, metav1.ListOptions{})
	if err != nil || len(jobs.Items) > 0 {
		t.Errorf("analyze created Jobs %v (%v)", jobs, err)
	}
	events, err := e.Kube.CoreV1().Events(e.NS).List(e.Ctx, metav1.ListOptions{})
	if err != nil || len(events.Items) > 0 {
		t.Errorf("analyze left Events %v (%v)", events, err)
	}
}
