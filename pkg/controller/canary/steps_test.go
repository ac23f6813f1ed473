package canary

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

const (
	Bk = v1alpha1.BatchBaking
	RB = v1alpha1.BatchRolledBack

	createCanaryDep = "create deployments checkout-canary"
)

// stepsCanary is newCanary with spec.steps instead of batches.
func stepsCanary(edit func(*v1alpha1.CanarySpec), steps ...v1alpha1.CanaryStep) *v1alpha1.Canary {
	cn := newCanary("")
	cn.Spec.Batches, cn.Spec.PauseType = nil, ""
	cn.Spec.Steps = steps
	if edit != nil {
		edit(&cn.Spec)
	}
	return cn
}

func timedPause(d time.Duration) *v1alpha1.CanaryPause {
	return &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: d}}
}

// startStep1 runs a release of 2 canary pods in step 1 up to the point where they are available
// and the stable Deployment has shrunk to 8: the step bakes.
func startStep1(f *fixture) {
	f.t.Helper()
	f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.available("checkout-canary", 2)
	f.step(patchStable+replicas(8), writeStatus)
	f.available("checkout", 8)
}

// settleStable writes the status that shows the stable Deployment shrunk by startStep1.
func settleStable(f *fixture) {
	f.t.Helper()
	f.step(writeStatus)
}

// A timed pause goes on by itself once its time is up, with nothing written while it runs.
func TestTimedPauseContinuesByItself(t *testing.T) {
	f := newFixture(t, stepsCanary(nil,
		v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Pause: timedPause(time.Minute)},
		v1alpha1.CanaryStep{Replicas: intstr.FromString("100%")}), newStable(10))
	startStep1(f)
	c := f.status(v1alpha1.CanaryProgressing, 1, Bk, P)
	if end := c.Status.Batches[0].PauseEndTime; end == nil || !end.Time.Equal(start.Add(time.Minute)) {
		t.Fatalf("pauseEndTime %v, want %v", end, start.Add(time.Minute))
	}
	if c := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); c == nil || c.Reason != v1alpha1.ReasonBaking {
		t.Errorf("Progressing condition %+v, want reason Baking", c)
	}
	settleStable(f)
	f.clock.Step(59 * time.Second)
	f.settled()
	f.clock.Step(2 * time.Second)
	f.step(patchCanary+replicas(10), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U)
	f.wantEvent("Normal PauseEnded")
	f.available("checkout-canary", 10)
	f.step(patchStable+replicas(0), writeStatus)
	f.available("checkout", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 2, C, C)
}

// A promotion ends a timed pause before its time.
func TestPromoteEndsATimedPause(t *testing.T) {
	f := newFixture(t, stepsCanary(nil,
		v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Pause: timedPause(time.Hour)}), newStable(10))
	startStep1(f)
	f.status(v1alpha1.CanaryProgressing, 1, Bk, P)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchCanary+replicas(10), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U)
	f.wantEvent("Normal Promoted")
}

// The plan asks to be looked at again when a timed pause ends, since nothing it watches
// changes then.
func TestPlanRequeuesAtTheEndOfAPause(t *testing.T) {
	cn := stepsCanary(nil, v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Pause: timedPause(time.Minute)})
	end := metav1.NewTime(start.Add(30 * time.Second))
	cn.Status.CurrentBatch = 1
	cn.Status.Batches = []v1alpha1.CanaryBatchStatus{
		{Index: 1, CanaryReplicas: 2, State: Bk, PauseEndTime: &end},
		{Index: 2, CanaryReplicas: 10, State: P},
	}
	cn.Annotations = map[string]string{v1alpha1.AnnotationStableSnapshot: snapshotOf(newStable(10))}
	canaryDep := newPairPlan(&decision{canary: cn}, specPair(cn)).newCanaryDeployment(2)
	canaryDep.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	r := computePlan(&observed{canary: cn, stable: newStable(8), canaryDep: canaryDep}, metav1.NewTime(start))
	if r.requeueAfter != 30*time.Second || len(pairOf(r).writes) != 0 {
		t.Errorf("requeueAfter %s, writes %q; want 30s and none", r.requeueAfter, writesOf(r))
	}
}

// canaryPodLister serves canary pods with the given restarts each, as the agent's pod
// informer would.
func canaryPodLister(t *testing.T, restarts ...int32) corelisters.PodLister {
	t.Helper()
	return podLister(t, map[string]string{"app": "checkout", "track": "canary", v1alpha1.LabelManagedBy: v1alpha1.ManagedByAgent}, restarts...)
}

// podLister serves ready canary pods with the given labels and restarts each.
func podLister(t *testing.T, labels map[string]string, restarts ...int32) corelisters.PodLister {
	t.Helper()
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i, n := range restarts {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("checkout-canary-%d", i), Namespace: ns, Labels: labels},
			Status: corev1.PodStatus{
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "checkout", Ready: true, RestartCount: n}},
			},
		}
		if err := store.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewPodLister(store)
}

func withHealthCheck(s *v1alpha1.CanarySpec) {
	s.Analysis = []v1alpha1.AnalysisCheck{{Name: "health", Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{}}}}
}

// A failed check rolls the release back by itself: status.abort says which check and what it
// measured, Degraded says why, the stable Deployment grows back before the canary goes, and a
// retry starts again from step 1.
func TestFailedCheckRollsBackAndRetryStartsAgain(t *testing.T) {
	f := newFixture(t, stepsCanary(withHealthCheck,
		v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Analysis: []string{"health"}}), newStable(10))
	f.ctrl.analysisEnv.Pods = canaryPodLister(t, 0, 3)
	startStep1(f)
	c := f.status(v1alpha1.CanaryProgressing, 1, Bk, P)
	if len(c.Status.Analysis) != 1 || c.Status.Analysis[0].Phase != v1alpha1.AnalysisRunning {
		t.Fatalf("analysis %+v, want health Running", c.Status.Analysis)
	}

	f.step(patchStable+replicas(10), writeStatus)
	c = f.status(v1alpha1.CanaryRollingBack, 1, RB, P)
	a := c.Status.Abort
	if a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "health" || a.Step != 1 || a.Retries != 0 || !strings.Contains(a.Message, "restarts:3") {
		t.Fatalf("abort %+v", a)
	}
	if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Status != metav1.ConditionTrue || d.Reason != v1alpha1.ReasonAnalysisFailed {
		t.Errorf("Degraded condition %+v", d)
	}
	if st := c.Status.Analysis[0]; st.Phase != v1alpha1.AnalysisFailed || len(st.Measurements) != 1 {
		t.Errorf("check status %+v", st)
	}
	f.wantEvent("Warning AnalysisFailed")

	f.available("checkout", 10)
	f.step(patchCanary+replicas(0), writeStatus)
	f.available("checkout-canary", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryRolledBack, 1, RB, P)
	// Clearing or setting spec.rollback does not undo an abort: only a retry does.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = false })
	f.step(writeStatus) // observedGeneration
	f.status(v1alpha1.CanaryRolledBack, 1, RB, P)

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Retries = 1 })
	f.step(patchCanary+replicas(2), writeStatus)
	c = f.status(v1alpha1.CanaryProgressing, 1, U, P)
	if c.Status.Abort != nil || len(c.Status.Analysis) != 0 {
		t.Errorf("after retry: abort %+v, analysis %+v", c.Status.Abort, c.Status.Analysis)
	}
	f.wantEvent("Normal ReleaseRetried")
}

// A check whose provider cannot measure ends inconclusive, never passed: the step waits for a
// person, and a promotion accepts it.
func TestInconclusiveCheckWaitsForAPerson(t *testing.T) {
	f := newFixture(t, stepsCanary(func(s *v1alpha1.CanarySpec) {
		withHealthCheck(s)
		s.Analysis[0].ConsecutiveErrorLimit = ptr.To[int32](0)
	}, v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Analysis: []string{"health"}}), newStable(10))
	// No pod lister: podHealth cannot measure.
	startStep1(f)
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryPaused, 1, Ps, P)
	if p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); p == nil || p.Reason != v1alpha1.ReasonAnalysisInconclusive {
		t.Errorf("Progressing condition %+v", p)
	}
	if c.Status.Abort != nil {
		t.Errorf("an inconclusive check aborted the release: %+v", c.Status.Abort)
	}
	f.wantEvent("Warning AnalysisInconclusive")
	f.settled()
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchCanary+replicas(10), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U)
}

// A passing check lets the step complete; its verdict stays in status.
func TestPassingCheckCompletesTheStep(t *testing.T) {
	f := newFixture(t, stepsCanary(withHealthCheck,
		v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Analysis: []string{"health"}}), newStable(10))
	f.ctrl.analysisEnv.Pods = canaryPodLister(t, 0, 0)
	startStep1(f)
	f.step(patchCanary+replicas(10), writeStatus)
	c := f.status(v1alpha1.CanaryProgressing, 2, C, U)
	if st := c.Status.Analysis; len(st) != 1 || st[0].Phase != v1alpha1.AnalysisSuccessful || st[0].Successful != 1 {
		t.Errorf("analysis %+v", st)
	}
	f.wantEvent("Normal AnalysisPassed")
}

// A job check runs one Job per measurement, owned by the Canary; the Job's success passes it.
func TestJobCheck(t *testing.T) {
	f := newFixture(t, stepsCanary(func(s *v1alpha1.CanarySpec) {
		s.Analysis = []v1alpha1.AnalysisCheck{{Name: "smoke", Provider: v1alpha1.AnalysisProvider{Job: &v1alpha1.JobProvider{
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "smoke", Image: "curl"}}}}}},
		}}}}
	}, v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Analysis: []string{"smoke"}}), newStable(10))
	startStep1(f)
	job := fmt.Sprintf("checkout-smoke-1-%d-1", start.Unix())
	f.step("create jobs "+job, writeStatus)
	created, err := f.kube.BatchV1().Jobs(ns).Get(context.Background(), job, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(created); ref == nil || ref.UID != "canary-uid" {
		t.Errorf("Job controller %+v", ref)
	}
	f.settled() // still running: nothing written
	created.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	if _, err := f.kube.BatchV1().Jobs(ns).UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.step(patchCanary+replicas(10), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U)
}

// A step that does not become available in time makes the Canary Degraded, and goes on if its
// pods come; with progressDeadlineAbort it rolls back instead.
func TestProgressDeadline(t *testing.T) {
	for _, abort := range []bool{false, true} {
		t.Run(fmt.Sprintf("abort=%v", abort), func(t *testing.T) {
			f := newFixture(t, stepsCanary(func(s *v1alpha1.CanarySpec) {
				s.ProgressDeadlineSeconds = ptr.To[int32](60)
				s.ProgressDeadlineAbort = abort
			}, v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2)}), newStable(10))
			f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
			f.available("checkout-canary", 0)
			f.clock.Step(59 * time.Second)
			f.settled()
			f.clock.Step(2 * time.Second)
			if !abort {
				f.step(writeStatus)
				c := f.status(v1alpha1.CanaryDegraded, 1, U, P)
				if p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing); p == nil || p.Status != metav1.ConditionFalse || p.Reason != v1alpha1.ReasonProgressDeadlineExceeded {
					t.Errorf("Progressing condition %+v", p)
				}
				f.wantEvent("Warning ProgressDeadlineExceeded")
				f.settled()
				f.available("checkout-canary", 2) // the pods come after all
				f.step(patchCanary+replicas(10), patchStable+replicas(8), writeStatus)
				f.status(v1alpha1.CanaryProgressing, 2, C, U)
				return
			}
			f.step(patchCanary+replicas(0), writeStatus)
			c := f.status(v1alpha1.CanaryRollingBack, 1, RB, P)
			if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonProgressDeadlineExceeded || a.Step != 1 {
				t.Errorf("abort %+v", a)
			}
		})
	}
}

// A template change while a step bakes starts the step again: its pause and checks judged the
// old template's pods.
func TestTemplateChangeWhileBakingStartsTheStepAgain(t *testing.T) {
	f := newFixture(t, stepsCanary(nil,
		v1alpha1.CanaryStep{Replicas: intstr.FromInt32(2), Pause: timedPause(time.Hour)}), newStable(10))
	startStep1(f)
	settleStable(f)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Canary.Template.Spec.Containers[0].Image = "nginx:1.28" })
	f.step("update deployments checkout-canary", writeStatus)
	c := f.status(v1alpha1.CanaryProgressing, 1, U, P)
	if b := c.Status.Batches[0]; b.PauseEndTime != nil || b.FinishTime != nil {
		t.Errorf("step 1 after the template change: %+v", b)
	}
	f.available("checkout-canary", 2) // the new template's pods
	f.step(writeStatus)
	c = f.status(v1alpha1.CanaryProgressing, 1, Bk, P)
	if end := c.Status.Batches[0].PauseEndTime; end == nil || !end.Time.Equal(start.Add(time.Hour)) {
		t.Errorf("pause restarted until %v", end)
	}
}

// A template change after completion is not rolled out without steps: the Canary is Degraded,
// saying how to release it, and nothing is written; restoring the template heals it.
func TestTemplateChangeAfterCompletionIsRefused(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseNone, 4, C, 10, 0, func(c *v1alpha1.Canary) { c.Status.Phase = v1alpha1.CanaryCompleted })
	f.available("checkout", 0)
	f.step(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 4, C, C, C, C)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Canary.Template.Spec.Containers[0].Image = "nginx:1.29" })
	f.step(writeStatus)
	c := f.status(v1alpha1.CanaryDegraded, 4, C, C, C, C)
	if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Reason != v1alpha1.ReasonTemplateChangedAfterCompletion || !strings.Contains(d.Message, "abort") {
		t.Errorf("Degraded condition %+v", d)
	}
	if img := f.deployment("checkout-canary").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
		t.Errorf("the canary Deployment runs %s: the new template was rolled out", img)
	}
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Canary.Template.Spec.Containers[0].Image = "nginx:1.27" })
	f.step(writeStatus)
	f.status(v1alpha1.CanaryCompleted, 4, C, C, C, C)
}
