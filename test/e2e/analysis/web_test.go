package analysis

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A web check against a test server: an answer within the objective passes, one outside it
// fails, and a server that answers 500 is never a pass.
func TestWebCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good":
			_, _ = w.Write([]byte(`{"status": "ok", "errorBudgetLeft": 0.8}`))
		case "/bad":
			_, _ = w.Write([]byte(`{"status": "breached", "errorBudgetLeft": 0}`))
		default:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		path string
		want v1alpha1.AnalysisPhase
	}{{"/good", v1alpha1.AnalysisSuccessful}, {"/bad", v1alpha1.AnalysisFailed}, {"/broken", v1alpha1.AnalysisInconclusive}} {
		t.Run(tc.path, func(t *testing.T) {
			check := &v1alpha1.AnalysisCheck{
				Name: "slo", Interval: &metav1.Duration{Duration: time.Second}, Count: ptr.To[int32](2),
				ConsecutiveErrorLimit: ptr.To[int32](1),
				SuccessCondition:      `result.status == "ok" && result.errorBudgetLeft > 0.1`,
				FailureCondition:      `result.status == "breached"`,
				Provider:              v1alpha1.AnalysisProvider{Web: &v1alpha1.WebProvider{URL: srv.URL + tc.path}},
			}
			p, err := analysis.Env{}.Provider(check, analysis.Target{})
			if err != nil {
				t.Fatal(err)
			}
			if st := run(t, check, p); st.Phase != tc.want {
				t.Fatalf("phase %s: %s; want %s", st.Phase, st.Message, tc.want)
			}
		})
	}
}
