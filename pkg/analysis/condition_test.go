package analysis

import (
	"fmt"
	"strings"
	"testing"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestCompileRefusesBadExpressions(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		expr, want string
	}{
		{"result <", "successCondition \"result <\" does not compile"},
		{"result + 1", "is of type int, not bool"},
		{"result", ""}, // dyn: only known at evaluation
		{"'a' + 'b'", "is of type string, not bool"},
		{"results > 1", "undeclared reference to 'results'"},
	} {
		_, err := c.Compile("successCondition", tc.expr)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.expr, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got error %v, want one containing %q", tc.expr, err, tc.want)
		}
	}
}

func TestCompileKeepsPrograms(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	p1, err := c.Compile("successCondition", "result < 1")
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := c.Compile("failureCondition", "result < 1")
	if p1 != p2 || c.progs.Len() != 1 {
		t.Errorf("the same expression was compiled twice (%d programs)", c.progs.Len())
	}
}

// Conditions made distinct by template arguments do not pile up: past programsKept the least
// recently used program goes, and a program in use stays.
func TestCompileKeepsABoundedNumberOfPrograms(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	hot, err := c.Compile("successCondition", "result < 0")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2*programsKept; i++ {
		if _, err := c.Compile("successCondition", fmt.Sprintf("result < %d", i)); err != nil {
			t.Fatal(err)
		}
		if i%64 == 0 { // used now and then, as a live check's condition is
			if p, _ := c.Compile("successCondition", "result < 0"); p != hot {
				t.Fatalf("after %d other expressions the one in use was compiled again", i)
			}
		}
	}
	if n := c.progs.Len(); n != programsKept {
		t.Errorf("%d programs kept, want %d", n, programsKept)
	}
	if _, ok := c.progs.Get("result < 1"); ok {
		t.Error("the least recently used program is still kept")
	}
}

func TestJudge(t *testing.T) {
	podHealth := &appsv1alpha1.PodHealthProvider{MaxRestarts: 1}
	health := func(pods, notReady, restarts int64) map[string]int64 {
		return map[string]int64{"pods": pods, "ready": pods - notReady, "notReady": notReady, "restarts": restarts, "totalRestarts": restarts}
	}
	for _, tc := range []struct {
		name             string
		success, failure string
		provider         appsv1alpha1.AnalysisProvider
		value            any
		want             appsv1alpha1.AnalysisPhase
		wantErr          string
	}{
		{name: "success only, true", success: "result < 0.05", value: 0.01, want: appsv1alpha1.AnalysisSuccessful},
		{name: "success only, false fails", success: "result < 0.05", value: 0.5, want: appsv1alpha1.AnalysisFailed},
		{name: "failure only, true", failure: "result > 0.05", value: 0.5, want: appsv1alpha1.AnalysisFailed},
		{name: "failure only, false passes", failure: "result > 0.05", value: 0.01, want: appsv1alpha1.AnalysisSuccessful},
		{name: "both, neither matches", success: "result < 0.01", failure: "result > 0.1", value: 0.05, want: appsv1alpha1.AnalysisInconclusive},
		{name: "both, failure wins", success: "result >= 0", failure: "result > 0.1", value: 0.5, want: appsv1alpha1.AnalysisFailed},
		{name: "int literal against a double", success: "result < 1", value: 0.5, want: appsv1alpha1.AnalysisSuccessful},
		{name: "vector", success: "result.all(x, x < 0.05)", value: []float64{0.01, 0.02}, want: appsv1alpha1.AnalysisSuccessful},
		{name: "vector element", success: "result[1] < 0.05", value: []float64{0.01, 0.2}, want: appsv1alpha1.AnalysisFailed},
		{name: "empty vector indexed is an error", success: "result[0] < 0.05", value: []float64{}, want: appsv1alpha1.AnalysisError, wantErr: "successCondition"},
		{name: "not a bool is an error", success: "result", value: 0.5, want: appsv1alpha1.AnalysisError, wantErr: "not a bool"},
		{name: "job default: success", provider: appsv1alpha1.AnalysisProvider{Job: &appsv1alpha1.JobProvider{}}, value: true, want: appsv1alpha1.AnalysisSuccessful},
		{name: "job default: failure", provider: appsv1alpha1.AnalysisProvider{Job: &appsv1alpha1.JobProvider{}}, value: false, want: appsv1alpha1.AnalysisFailed},
		{name: "podHealth default: healthy", provider: appsv1alpha1.AnalysisProvider{PodHealth: podHealth}, value: health(3, 0, 1), want: appsv1alpha1.AnalysisSuccessful},
		{name: "podHealth default: restarts", provider: appsv1alpha1.AnalysisProvider{PodHealth: podHealth}, value: health(3, 0, 2), want: appsv1alpha1.AnalysisFailed},
		{name: "podHealth default: not ready", provider: appsv1alpha1.AnalysisProvider{PodHealth: podHealth}, value: health(3, 1, 0), want: appsv1alpha1.AnalysisFailed},
		{name: "podHealth default: no pods", provider: appsv1alpha1.AnalysisProvider{PodHealth: podHealth}, value: health(0, 0, 0), want: appsv1alpha1.AnalysisInconclusive},
		{name: "podHealth own condition", success: "result.totalRestarts < 10", provider: appsv1alpha1.AnalysisProvider{PodHealth: podHealth}, value: health(3, 3, 5), want: appsv1alpha1.AnalysisSuccessful},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCompiler()
			if err != nil {
				t.Fatal(err)
			}
			check := &appsv1alpha1.AnalysisCheck{Name: "c", SuccessCondition: tc.success, FailureCondition: tc.failure, Provider: tc.provider}
			conds, err := c.compileCheck(check)
			if err != nil {
				t.Fatal(err)
			}
			got, err := conds.judge(tc.value)
			if got != tc.want {
				t.Errorf("phase %s, want %s (err %v)", got, tc.want, err)
			}
			if (err != nil) != (tc.wantErr != "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestJudgeCostLimit(t *testing.T) {
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	c.costLimit = 10_000 // as 1 000 000, reached sooner (the race detector slows every step)
	p, err := c.Compile("successCondition", "result.all(x, result.all(y, x <= y || x > y))")
	if err != nil {
		t.Fatal(err)
	}
	long := make([]float64, 200)
	_, err = conditions{success: p}.judge(long)
	if err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("a quadratic condition over 200 values: error %v, want the cost limit", err)
	}
	if _, err := (conditions{success: p}).judge([]float64{1, 2}); err != nil {
		t.Errorf("the same condition over 2 values: %v", err)
	}
}
