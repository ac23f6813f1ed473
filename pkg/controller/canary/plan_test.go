package canary

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The plan is a function of what a sync observed: no client, no lister.

func TestStepsOfPauseTypes(t *testing.T) {
	for pause, want := range map[v1alpha1.PauseType][]bool{
		v1alpha1.PauseFirst: {true, false, false, false},
		v1alpha1.PauseAll:   {true, true, true, false},
		v1alpha1.PauseNone:  {false, false, false, false},
	} {
		steps, err := stepsOf(&newCanary(pause).Spec)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int32
		var pauses []bool
		for _, s := range steps {
			sizes, pauses = append(sizes, s.canaryReplicas), append(pauses, s.pause)
		}
		if !slices.Equal(sizes, []int32{1, 4, 7, 10}) || !slices.Equal(pauses, want) {
			t.Errorf("%s: sizes %v, pauses %v; want [1 4 7 10], %v", pause, sizes, pauses, want)
		}
	}
}

// writesOf renders a plan's writes as kind/name/replicas.
func writesOf(r *plan) []string {
	var out []string
	for _, w := range pairOf(r).writes {
		out = append(out, w.doing())
	}
	return out
}

func TestPlanStartsARelease(t *testing.T) {
	r := computePlan(&observed{canary: newCanary(v1alpha1.PauseFirst), stable: newStable(10)}, metav1.NewTime(start))
	if r.newSnapshot == "" {
		t.Error("no snapshot of the stable Deployment planned")
	}
	if got := writesOf(r); !slices.Equal(got, []string{`creating canary Deployment "checkout-canary"`}) {
		t.Errorf("writes %q", got)
	}
	if st := computeStatus(r, nil); st.Phase != v1alpha1.CanaryProgressing || st.CurrentBatch != 1 || st.CanaryReplicas != 1 || st.StableReplicas != 10 {
		t.Errorf("status %+v", st)
	}
}

func TestPlanCompletesOnlyWithoutStablePods(t *testing.T) {
	cn := newCanary(v1alpha1.PauseNone)
	cn.Annotations = map[string]string{v1alpha1.AnnotationStableSnapshot: snapshotOf(newStable(10))}
	for i, size := range []int32{1, 4, 7, 10} {
		cn.Status.Batches = append(cn.Status.Batches, v1alpha1.CanaryBatchStatus{Index: int32(i + 1), CanaryReplicas: size, State: v1alpha1.BatchCompleted})
	}
	cn.Status.CurrentBatch = 4
	canaryDep := newPairPlan(&decision{canary: cn}, specPair(cn)).newCanaryDeployment(10)
	canaryDep.Status = appsv1.DeploymentStatus{Replicas: 10, UpdatedReplicas: 10, AvailableReplicas: 10}
	stable := newStable(0)
	stable.Status.Replicas, stable.Status.AvailableReplicas = 2, 2 // two stable pods still going

	r := computePlan(&observed{canary: cn, stable: stable, canaryDep: canaryDep}, metav1.NewTime(start))
	if st := computeStatus(r, nil); st.Phase != v1alpha1.CanaryProgressing || len(pairOf(r).writes) != 0 {
		t.Errorf("with 2 stable pods left: phase %s, writes %q", st.Phase, writesOf(r))
	}
	stable.Status.Replicas, stable.Status.AvailableReplicas = 0, 0
	r = computePlan(&observed{canary: cn, stable: stable, canaryDep: canaryDep}, metav1.NewTime(start))
	if st := computeStatus(r, nil); st.Phase != v1alpha1.CanaryCompleted {
		t.Errorf("with no stable pod left: phase %s (%s)", st.Phase, st.Message)
	}
}

func TestFailureMakesTheStatusDegraded(t *testing.T) {
	r := computePlan(&observed{canary: newCanary(v1alpha1.PauseFirst), stable: newStable(10)}, metav1.NewTime(start))
	st := computeStatus(r, &failure{reason: v1alpha1.ReasonFailedCreate, message: "refused"})
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonFailedCreate || c.Message != "refused" {
		t.Errorf("Degraded condition %+v", c)
	}
	if st.Phase != v1alpha1.CanaryDegraded || st.Message != "refused" {
		t.Errorf("phase %s, message %q", st.Phase, st.Message)
	}
}
