package analysis

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/promharness"
)

// errorRatio is the share of failed requests over the last 5 seconds (five scrapes).
const errorRatio = `sum(rate(demo_errors_total[5s])) / sum(rate(demo_requests_total[5s]))`

func errorRateCheck(address string, count int32) *v1alpha1.AnalysisCheck {
	return &v1alpha1.AnalysisCheck{
		Name:             "error-rate",
		Interval:         &metav1.Duration{Duration: time.Second},
		Count:            &count,
		SuccessCondition: "result.size() == 1 && result[0] < 0.05",
		Provider:         v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: address, Query: errorRatio}},
	}
}

// startApp runs the exporter at errorRate and a Prometheus scraping it, and waits until the
// query has a value.
func startApp(t *testing.T, errorRate float64) (*promharness.Exporter, *promharness.Prometheus) {
	t.Helper()
	exp := promharness.StartExporter(t, errorRate)
	prom := promharness.Start(t, exp.Addr)
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := prom.Query(context.Background(), errorRatio)
		if err == nil && strings.Contains(out, `"value"`) {
			return exp, prom
		}
		if time.Now().After(deadline) {
			t.Fatalf("no error ratio from prometheus after a minute: %s %v", out, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestPrometheusPasses(t *testing.T) {
	_, prom := startApp(t, 0.01)
	check := errorRateCheck(prom.URL, 3)
	p, err := analysis.Env{}.Provider(check, analysis.Target{})
	if err != nil {
		t.Fatal(err)
	}
	st := run(t, check, p)
	if st.Phase != v1alpha1.AnalysisSuccessful || st.Successful != 3 || st.Count != 3 {
		t.Fatalf("phase %s, %d of %d successful (%s); want Successful, 3 of 3", st.Phase, st.Successful, st.Count, st.Message)
	}
	for _, m := range st.Measurements {
		if m.Value != "[0.01]" {
			t.Errorf("measured %s at an error rate of 0.01", m.Value)
		}
	}
}

// The error rate goes up while the check runs: it fails at the first bad value, with the
// value in its message.
func TestPrometheusFails(t *testing.T) {
	exp, prom := startApp(t, 0.01)
	check := errorRateCheck(prom.URL, 60)
	p, err := analysis.Env{}.Provider(check, analysis.Target{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysis.NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	first, v := r.Step(context.Background(), check, &v1alpha1.AnalysisCheckStatus{}, p, time.Now())
	if v.Phase != v1alpha1.AnalysisRunning || first.Successful != 1 {
		t.Fatalf("first measurement at 1%% errors: %s %v, want Running with one success", v.Phase, values(first))
	}
	exp.SetErrorRate(t, 0.5)
	st := run(t, check, p)
	if st.Phase != v1alpha1.AnalysisFailed || st.Failed != 1 {
		t.Fatalf("phase %s with %d failed (%s); want Failed after one failed measurement", st.Phase, st.Failed, st.Message)
	}
	if !strings.Contains(st.Message, "1 failed measurements, more than failureLimit 0; last: [0.") {
		t.Errorf("message %q does not give the failing value", st.Message)
	}
}

// Nothing listens at the address: every query is an error, retried, and the check ends
// Inconclusive, never Successful.
func TestPrometheusUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := fmt.Sprintf("http://%s", l.Addr())
	l.Close()
	check := errorRateCheck(address, 3)
	limit := int32(2)
	check.ConsecutiveErrorLimit = &limit
	p, err := analysis.Env{}.Provider(check, analysis.Target{})
	if err != nil {
		t.Fatal(err)
	}
	st := run(t, check, p)
	if st.Phase != v1alpha1.AnalysisInconclusive || st.Errors != 3 || st.Successful != 0 {
		t.Fatalf("phase %s, %d errors, %d successful (%s); want Inconclusive after 3 errors", st.Phase, st.Errors, st.Successful, st.Message)
	}
	if !strings.Contains(st.Message, "connection refused") {
		t.Errorf("message %q does not say why", st.Message)
	}
}
