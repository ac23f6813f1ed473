package canary

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// backgroundCanary releases in two steps without pauses, with check health in the background
// from startingStep.
func backgroundCanary(startingStep *int32) *v1alpha1.Canary {
	return stepsCanary(func(s *v1alpha1.CanarySpec) {
		withHealthCheck(s)
		s.Analysis[0].Interval = &metav1.Duration{Duration: 10 * time.Second}
		s.BackgroundAnalysis = &v1alpha1.CanaryBackgroundAnalysis{Analysis: []string{"health"}, StartingStep: startingStep}
	}, v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2)}, v1alpha1.CanaryStep{Replicas: intstr.FromInt32(6)})
}

// A background check measures while a step's pods roll, between bakes, and its failure rolls
// the release back at once.
func TestBackgroundCheckFailsTheReleaseBetweenSteps(t *testing.T) {
	f := newFixture(t, backgroundCanary(nil), newStable(10))
	f.ctrl.analysisEnv.Pods = canaryPodLister(t, 0, 3)
	f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	c := f.status(v1alpha1.CanaryProgressing, 1, U, P, P)
	if bg := c.Status.BackgroundAnalysis; len(bg) != 1 || bg[0].Name != "health" || bg[0].Phase != v1alpha1.AnalysisRunning {
		t.Fatalf("background analysis %+v, want health Running from step 1", bg)
	}
	f.refresh()
	f.sync()
	c = f.canary()
	a := c.Status.Abort
	if a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "health" || a.Step != 1 || !strings.Contains(a.Message, "background check health failed at step 1/3: 1 failed measurements") {
		t.Fatalf("abort %+v; want the background check's failure at step 1 while its pods roll", a)
	}
	if c.Status.Batches[0].State != RB {
		t.Errorf("step 1 is %s, want RolledBack: the failure came while it was upgrading, between bakes", c.Status.Batches[0].State)
	}
}

// Background checks start with startingStep, not before.
func TestBackgroundCheckStartsAtItsStep(t *testing.T) {
	f := newFixture(t, backgroundCanary(ptr.To[int32](2)), newStable(10))
	f.ctrl.analysisEnv.Pods = canaryPodLister(t, 0, 0)
	f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	for i := 0; i < 3 && f.canary().Status.CurrentBatch < 2; i++ {
		f.refresh()
		f.sync()
		if bg := f.canary().Status.BackgroundAnalysis; len(bg) != 0 && f.canary().Status.CurrentBatch < 2 {
			t.Fatalf("background analysis %+v before step 2", bg)
		}
	}
	if f.canary().Status.CurrentBatch != 2 {
		t.Fatalf("the release did not reach step 2: %+v", f.canary().Status)
	}
	for i := 0; i < 2; i++ {
		f.refresh()
		f.sync()
	}
	if bg := f.canary().Status.BackgroundAnalysis; len(bg) != 1 || bg[0].Phase != v1alpha1.AnalysisRunning || bg[0].Count != 1 || bg[0].Successful != 1 {
		t.Fatalf("background analysis %+v, want health measuring from step 2", bg)
	}
}
