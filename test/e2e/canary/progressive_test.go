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
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/promharness"
)

// Progressive delivery end to end (docs/canary.md): timed pauses, the progress deadline, and
// analysis that passes, fails (the release rolls back by itself) or cannot decide, against
// the real parts: a Prometheus built from its module scraping test/exporter, Jobs run by
// kube-controller-manager whose pods kwok finishes, and kwok pods of a restarting image. The
// capacity watcher of every test fails it the moment available pods drop below replicas.

func step(replicas intstr.IntOrString, pause *v1alpha1.CanaryPause, checks ...string) v1alpha1.CanaryStep {
	return v1alpha1.CanaryStep{Replicas: replicas, Pause: pause, Analysis: checks}
}

func pauseFor(d time.Duration) *v1alpha1.CanaryPause {
	return &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: d}}
}

// createSteps releases image as checkout-canary through steps, with the checks given.
func (e *env) createSteps(image string, edit func(*v1alpha1.CanarySpec), steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	c := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.CanarySpec{
			Replicas:  replicas,
			StableRef: v1alpha1.StableRef{Name: stableName},
			Canary: v1alpha1.CanaryTarget{
				Name:     canaryName,
				Template: podTemplate(map[string]string{"app": "checkout", "track": "canary"}, image),
			},
			Steps: steps,
		},
	}
	if edit != nil {
		edit(&c.Spec)
	}
	e.expectSurge(&c.Spec)
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

func (e *env) waitPhase(phase v1alpha1.CanaryPhase) *v1alpha1.Canary {
	e.T.Helper()
	return e.waitCanary("phase "+string(phase), func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.ObservedGeneration == c.Generation && c.Status.Phase == phase
	})
}

// waitRolledBackBy waits until the release rolled back by itself for reason, and returns it.
func (e *env) waitRolledBackBy(reason string) *v1alpha1.Canary {
	e.T.Helper()
	c := e.waitPhase(v1alpha1.CanaryRolledBack)
	if c.Status.Abort == nil || c.Status.Abort.Reason != reason {
		e.T.Fatalf("rolled back with abort %+v, want reason %s\n%s", c.Status.Abort, reason, describe(c))
	}
	if d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Status != metav1.ConditionTrue || d.Reason != reason {
		e.T.Errorf("Degraded condition %+v, want True with reason %s", d, reason)
	}
	stable, canary, err := e.deployments()
	if err != nil {
		e.T.Fatal(err)
	}
	if *stable.Spec.Replicas != replicas || stable.Status.AvailableReplicas != replicas || *canary.Spec.Replicas != 0 {
		e.T.Errorf("after the rollback: stable %d (%d available), canary %d; want %d, %d, 0",
			*stable.Spec.Replicas, stable.Status.AvailableReplicas, *canary.Spec.Replicas, replicas, replicas)
	}
	e.WaitEvent(reason)
	return c
}

// A timed pause goes on by itself; a promote ends the rest of a long one.
func TestTimedPausesAndPromote(t *testing.T) {
	e := setup(t)
	e.createSteps("nginx:1.27", nil,
		step(intstr.FromInt32(2), pauseFor(3*time.Second)),
		step(intstr.FromString("50%"), pauseFor(time.Hour)))
	c := e.waitCanary("step 2 baking", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 2 && c.Status.Batches[1].State == v1alpha1.BatchBaking
	})
	b1, b2 := c.Status.Batches[0], c.Status.Batches[1]
	if c.Spec.ApprovedBatch != 0 || b1.State != v1alpha1.BatchCompleted {
		t.Fatalf("step 1 did not end by itself\n%s", describe(c))
	}
	if b1.PauseEndTime == nil || b2.StartTime.Before(b1.PauseEndTime) || b1.PauseEndTime.Sub(b1.FinishTime.Time) != 3*time.Second {
		t.Errorf("step 1 pause: finished %v, pause until %v, step 2 started %v", b1.FinishTime, b1.PauseEndTime, b2.StartTime)
	}
	e.WaitEvent(v1alpha1.EventPauseEnded)
	e.patchSpec(`{"approvedBatch":2}`)
	e.waitPhase(v1alpha1.CanaryCompleted)
	e.WaitEvent(v1alpha1.EventPromoted)
}

// A step whose pods cannot become available: Degraded once the deadline passes, then, with
// progressDeadlineAbort, rolled back by itself.
func TestProgressDeadline(t *testing.T) {
	for _, abort := range []bool{false, true} {
		t.Run(fmt.Sprintf("abort=%v", abort), func(t *testing.T) {
			e := setup(t)
			e.createSteps("nginx:1.27", func(s *v1alpha1.CanarySpec) {
				s.ProgressDeadlineSeconds = ptr.To[int32](5)
				s.ProgressDeadlineAbort = abort
				// No node has this label: the canary pods stay Pending.
				s.Canary.Template.Spec.NodeSelector = map[string]string{"example.com/nowhere": "true"}
			}, step(intstr.FromInt32(2), nil))
			if abort {
				e.waitRolledBackBy(v1alpha1.ReasonProgressDeadlineExceeded)
				return
			}
			c := e.waitPhase(v1alpha1.CanaryDegraded)
			p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
			if p == nil || p.Status != metav1.ConditionFalse || p.Reason != v1alpha1.ReasonProgressDeadlineExceeded || c.Status.Abort != nil {
				t.Fatalf("Progressing %+v, abort %+v\n%s", p, c.Status.Abort, describe(c))
			}
			e.WaitEvent(v1alpha1.EventDeadline)
		})
	}
}

// errorRatio is the share of failed requests over the last 5 seconds (five scrapes).
const errorRatio = `sum(rate(demo_errors_total[5s])) / sum(rate(demo_requests_total[5s]))`

// startPrometheus runs the exporter at errorRate and a Prometheus scraping it, and waits until
// the error ratio has a value.
func startPrometheus(t *testing.T, errorRate float64) string {
	t.Helper()
	exp := promharness.StartExporter(t, errorRate)
	prom := promharness.Start(t, exp.Addr)
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := prom.Query(context.Background(), errorRatio)
		if err == nil && strings.Contains(out, `"value"`) {
			return prom.URL
		}
		if time.Now().After(deadline) {
			t.Fatalf("no error ratio from prometheus after a minute: %s %v", out, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func errorRateCheck(address string) v1alpha1.AnalysisCheck {
	return v1alpha1.AnalysisCheck{
		Name: "error-rate", Interval: &metav1.Duration{Duration: time.Second}, Count: ptr.To[int32](3),
		SuccessCondition: "result.size() == 1 && result[0] < 0.05",
		FailureCondition: "result.size() == 1 && result[0] >= 0.05",
		Provider:         v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: address, Query: errorRatio}},
	}
}

func withChecks(checks ...v1alpha1.AnalysisCheck) func(*v1alpha1.CanarySpec) {
	return func(s *v1alpha1.CanarySpec) { s.Analysis = checks }
}

// Prometheus analysis: a low error rate lets the release complete; a high one rolls it back
// by itself, with the check and its values in status; an unreachable Prometheus pauses the
// release for a person and never passes.
func TestPrometheusAnalysis(t *testing.T) {
	t.Run("passes", func(t *testing.T) {
		e := setup(t)
		e.createSteps("nginx:1.27", withChecks(errorRateCheck(startPrometheus(t, 0.01))),
			step(intstr.FromInt32(2), nil, "error-rate"), step(intstr.FromString("50%"), nil, "error-rate"))
		c := e.waitPhase(v1alpha1.CanaryCompleted)
		if a := c.Status.Analysis; len(a) != 1 || a[0].Phase != v1alpha1.AnalysisSuccessful || a[0].Successful != 3 {
			t.Errorf("analysis of step 2: %+v", a)
		}
		e.WaitEvent(v1alpha1.EventAnalysisPassed)
	})
	t.Run("fails", func(t *testing.T) {
		e := setup(t)
		e.createSteps("nginx:1.27", withChecks(errorRateCheck(startPrometheus(t, 0.5))),
			step(intstr.FromInt32(2), nil, "error-rate"))
		c := e.waitRolledBackBy(v1alpha1.ReasonAnalysisFailed)
		m := c.Status.Analysis[0].Measurements
		if a := c.Status.Abort; a.Check != "error-rate" || a.Step != 1 || len(m) == 0 || !strings.Contains(a.Message, m[len(m)-1].Value) {
			t.Errorf("abort %+v, measurements %+v: want check error-rate at step 1 with the measured ratio", a, m)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		e := setup(t)
		check := errorRateCheck("http://127.0.0.1:1")
		check.ConsecutiveErrorLimit = ptr.To[int32](2)
		e.createSteps("nginx:1.27", withChecks(check), step(intstr.FromInt32(2), nil, "error-rate"))
		c := e.waitPhase(v1alpha1.CanaryPaused)
		p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
		if p == nil || p.Reason != v1alpha1.ReasonAnalysisInconclusive || c.Status.Abort != nil {
			t.Fatalf("Progressing %+v, abort %+v\n%s", p, c.Status.Abort, describe(c))
		}
		if a := c.Status.Analysis; len(a) != 1 || a[0].Phase != v1alpha1.AnalysisInconclusive || a[0].Errors < 3 || a[0].Successful != 0 {
			t.Errorf("analysis %+v: want Inconclusive after 3 errors, no success", a)
		}
		// A person accepts it: the release goes on.
		e.patchSpec(`{"approvedBatch":1}`)
		e.waitPhase(v1alpha1.CanaryCompleted)
	})
}

// jobCheck runs a Job of image: kwok finishes pods of "job-succeed" images with exit code 0 and
// of "job-fail" images with 1 (test/localcluster/stages.yaml).
func jobCheck(image string) v1alpha1.AnalysisCheck {
	return v1alpha1.AnalysisCheck{
		Name: "smoke",
		Provider: v1alpha1.AnalysisProvider{Job: &v1alpha1.JobProvider{Template: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "smoke", Image: image}},
				}},
			},
		}}},
	}
}

// Job analysis: a Job that succeeds passes the step; one that fails rolls the release back.
func TestJobAnalysis(t *testing.T) {
	t.Run("passes", func(t *testing.T) {
		e := setup(t)
		e.createSteps("nginx:1.27", withChecks(jobCheck("example.com/smoke:job-succeed")), step(intstr.FromInt32(2), nil, "smoke"))
		e.waitPhase(v1alpha1.CanaryCompleted)
		jobs, err := e.Kube.BatchV1().Jobs(e.NS).List(e.Ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs.Items) != 1 || metav1.GetControllerOf(&jobs.Items[0]) == nil || metav1.GetControllerOf(&jobs.Items[0]).Kind != "Canary" {
			t.Errorf("jobs: %d, want 1 owned by the Canary", len(jobs.Items))
		}
	})
	t.Run("fails", func(t *testing.T) {
		e := setup(t)
		e.createSteps("nginx:1.27", withChecks(jobCheck("example.com/smoke:job-fail")), step(intstr.FromInt32(2), nil, "smoke"))
		c := e.waitRolledBackBy(v1alpha1.ReasonAnalysisFailed)
		if c.Status.Abort.Check != "smoke" {
			t.Errorf("abort %+v", c.Status.Abort)
		}
	})
}

// podHealth catches a canary whose containers keep restarting (kwok's "restarting" images stay
// ready but count a restart every few seconds), and rolls the release back.
func TestPodHealthCatchesRestartingCanary(t *testing.T) {
	e := setup(t)
	e.createSteps("example.com/checkout:restarting", withChecks(v1alpha1.AnalysisCheck{
		Name: "health", Interval: &metav1.Duration{Duration: 2 * time.Second}, Count: ptr.To[int32](10),
		Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{}},
	}), step(intstr.FromInt32(2), nil, "health"))
	c := e.waitRolledBackBy(v1alpha1.ReasonAnalysisFailed)
	if a := c.Status.Abort; a.Check != "health" || !strings.Contains(a.Message, "restarts:") {
		t.Errorf("abort %+v", a)
	}
}

// retry after an abort starts the release again from step 1, and it can complete.
func TestRetryAfterAbort(t *testing.T) {
	e := setup(t)
	e.createSteps("nginx:1.27", func(s *v1alpha1.CanarySpec) {
		s.ProgressDeadlineSeconds = ptr.To[int32](5)
		s.ProgressDeadlineAbort = true
		s.Canary.Template.Spec.NodeSelector = map[string]string{"example.com/nowhere": "true"}
	}, step(intstr.FromInt32(2), nil))
	e.waitRolledBackBy(v1alpha1.ReasonProgressDeadlineExceeded)
	// Fix the template and retry, as `kubectl workload retry` does.
	e.patchSpec(`{"retries":1,"canary":{"template":{"spec":{"nodeSelector":null}}}}`)
	c := e.waitPhase(v1alpha1.CanaryCompleted)
	if c.Status.Abort != nil {
		t.Errorf("abort still set after a retry that completed: %+v", c.Status.Abort)
	}
	e.WaitEvent(v1alpha1.EventRetried)
}

// A new template on a completed Canary is never an ungated rollout: the Canary says Degraded
// with how to release it, and the canary Deployment keeps the released template.
func TestTemplateChangeAfterCompletionIsNotRolledOut(t *testing.T) {
	e := setup(t)
	e.createSteps("nginx:1.27", nil, step(intstr.FromInt32(5), nil))
	e.waitPhase(v1alpha1.CanaryCompleted)
	e.patchSpec(`{"canary":{"template":{"spec":{"containers":[{"name":"checkout","image":"nginx:1.29"}]}}}}`)
	c := e.waitPhase(v1alpha1.CanaryDegraded)
	d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
	if d == nil || d.Reason != v1alpha1.ReasonTemplateChangedAfterCompletion || !strings.Contains(d.Message, "retry") {
		t.Fatalf("Degraded condition %+v", d)
	}
	_, canary, err := e.deployments()
	if err != nil {
		t.Fatal(err)
	}
	if img := canary.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" || canary.Status.UpdatedReplicas != replicas {
		t.Errorf("canary Deployment: image %s, %d updated pods; want nginx:1.27 on all %d", img, canary.Status.UpdatedReplicas, replicas)
	}
	// The way out the message gives: abort, then retry, releases the new template in steps.
	e.patchSpec(`{"rollback":true}`)
	e.waitPhase(v1alpha1.CanaryRolledBack)
	e.patchSpec(`{"rollback":false,"approvedBatch":0,"retries":1}`)
	e.waitCanary("the new template released", func(c *v1alpha1.Canary, _, canary *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.ObservedGeneration == c.Generation &&
			canary.Spec.Template.Spec.Containers[0].Image == "nginx:1.29"
	})
}

// A step of every replica is reached in sub-steps of maxSurge pods: the surge watcher of every
// test holds pods to replicas + maxSurge, here 11, while available pods never drop below 10.
func TestSurgeBoundsABigStep(t *testing.T) {
	for _, surge := range []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("20%")} {
		t.Run(surge.String(), func(t *testing.T) {
			e := setup(t)
			e.createSteps("nginx:1.27", func(s *v1alpha1.CanarySpec) { s.MaxSurge = &surge }, step(intstr.FromString("100%"), nil))
			e.waitPhase(v1alpha1.CanaryCompleted)
			// And back, within the bound too.
			e.patchSpec(`{"rollback":true}`)
			e.waitPhase(v1alpha1.CanaryRolledBack)
			canarySizes, stableSizes := e.watch.check()
			if len(canarySizes) < 4 || len(stableSizes) < 4 {
				t.Errorf("canary sizes %v, stable sizes %v: want sub-steps both ways", canarySizes, stableSizes)
			}
		})
	}
}
