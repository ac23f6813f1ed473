package cmdtest

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// AnalysisTemplates are the templates of a platform team's library, created at created: the
// ClusterAnalysisTemplate error-rate (two Prometheus checks, an argument without and one with a
// default), and in namespace the AnalysisTemplate smoke (a web and a job check, labelled
// team=payments). Every provider and argument form shows in `list` and `get`.
func AnalysisTemplates(namespace string, created time.Time) []runtime.Object {
	at := func(ns, name string, lbls map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, CreationTimestamp: metav1.NewTime(created)}
	}
	every := &metav1.Duration{Duration: 30 * time.Second}
	prom := "http://prometheus.monitoring:9090"
	errorRate := &v1alpha1.ClusterAnalysisTemplate{ObjectMeta: at("", "error-rate", nil), Spec: v1alpha1.AnalysisTemplateSpec{
		Args: []v1alpha1.AnalysisArg{{Name: "service"}, {Name: "threshold", Value: ptr.To("0.05")}},
		Checks: []v1alpha1.AnalysisCheck{
			{Name: "error-ratio", Interval: every, Count: ptr.To[int32](10), FailureLimit: 1,
				SuccessCondition: "result.size() == 1 && result[0] < {{args.threshold}}",
				Provider: v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: prom,
					// On three lines, as a YAML block (|) gives it: examples/clusteranalysistemplate-error-rate.yaml.
					Query: "sum(rate(http_errors_total{service=\"{{args.service}}\"}[1m]))\n/\n  sum(rate(http_requests_total{service=\"{{args.service}}\"}[1m]))\n"}}},
			{Name: "latency-p99", Interval: every,
				FailureCondition: "result.size() == 1 && result[0] > 0.5",
				Provider: v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: prom,
					Query: `histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{service="{{args.service}}"}[1m])))`}}},
		}}}
	job := batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "smoke", Image: "example.com/smoke-test:v1", Args: []string{"{{args.url}}"}}}}}}}
	smoke := &v1alpha1.AnalysisTemplate{ObjectMeta: at(namespace, "smoke", map[string]string{"team": "payments"}), Spec: v1alpha1.AnalysisTemplateSpec{
		Args: []v1alpha1.AnalysisArg{{Name: "url"}},
		Checks: []v1alpha1.AnalysisCheck{
			{Name: "slo-service", SuccessCondition: `result.status == "ok"`,
				Provider: v1alpha1.AnalysisProvider{Web: &v1alpha1.WebProvider{URL: "https://slo.example.com/v1/status?url={{args.url}}", Method: "POST", Body: `{"window": "5m"}`}}},
			{Name: "smoke", Provider: v1alpha1.AnalysisProvider{Job: &v1alpha1.JobProvider{Template: job}}},
		}}}
	return []runtime.Object{errorRate, smoke}
}
