package dashboard

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestThresholds(t *testing.T) {
	for _, tc := range []struct {
		success, failure string
		want             []Threshold
	}{
		{"result < 0.01", "", []Threshold{{"success", "<", 0.01}}},
		{"result[0] >= 0.95", "result[0] < 0.5", []Threshold{{"success", ">=", 0.95}, {"failure", "<", 0.5}}},
		{"0.9 <= result", "", []Threshold{{"success", ">=", 0.9}}},
		{"size(result) == 0 || result[0] < 1e-3", "", []Threshold{{"success", "<", 0.001}}},
		{"result.exists(x, x > 2)", "", nil},
	} {
		if got := Thresholds(tc.success, tc.failure); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Thresholds(%q, %q) = %v, want %v", tc.success, tc.failure, got, tc.want)
		}
	}
}

func TestParseValue(t *testing.T) {
	num := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		value, field string
		want         *float64
	}{
		{"0.02", "", num(0.02)},
		{"[0.5,0.1]", "", num(0.5)},
		{"[]", "", nil},
		{"{notReady:1,pods:3}", "", nil},
		{"{notReady:1,pods:3}", "notReady", num(1)},
		{"{pods:3,notReady:0,restarts:2}", "notReady", num(0)},
		{"{pods:3}", "notReady", nil},
		{"NaN-ish", "", nil},
	} {
		got := parseValue(tc.value, tc.field)
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("parseValue(%q, %q) = %v, want %v", tc.value, tc.field, got, tc.want)
		}
	}
}

func canaryWithMeasurements(values ...string) *unstructured.Unstructured {
	c := pausedCanary()
	c.Spec.Analysis = []v1alpha1.AnalysisCheck{{Name: "errors", SuccessCondition: "result < 0.01"}}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := v1alpha1.AnalysisCheckStatus{Name: "errors"}
	for i, v := range values {
		st.Measurements = append(st.Measurements, v1alpha1.AnalysisMeasurement{Phase: "Successful", Value: v,
			MeasuredAt: metav1.NewTime(base.Add(time.Duration(i) * 10 * time.Second))})
	}
	c.Status.Analysis = []v1alpha1.AnalysisCheckStatus{st}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// The history keeps every measurement the watch saw once, in time order, beyond the ten the
// status keeps.
func TestHistoryMerges(t *testing.T) {
	h := NewHistory()
	h.Record(canaryWithMeasurements("0.1", "0.2"))
	h.Record(canaryWithMeasurements("0.1", "0.2", "0.3"))
	h.Record(canaryWithMeasurements("0.1", "0.2", "0.3"))
	got := h.Points("test", "checkout", "errors")
	var values []string
	for _, p := range got {
		values = append(values, p.Value)
	}
	if want := []string{"0.1", "0.2", "0.3"}; !reflect.DeepEqual(values, want) {
		t.Fatalf("history %v, want %v", values, want)
	}
	if got[2].Number == nil || *got[2].Number != 0.3 {
		t.Errorf("last point's number %v, want 0.3", got[2].Number)
	}
}
