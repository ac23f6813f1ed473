package canary

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
)

// Blue-green with a Deployment target (docs/canary-targets.md, "Blue-green with a Deployment
// target"): Deployment checkout, whose template carries the blue-green label as it would in Git,
// is released by `kubectl set image` alone through the temporary Deployment checkout-canary.
// Beside the capacity watcher (at least replicas available pods, at most twice replicas: the
// peak of a blue-green release) runs a watcher of the active Service's EndpointSlices that
// tells versions by the pods' image, not their Deployment: after the hand-over the Deployment
// and the temporary one run the same version, and the Service may select both then, never two
// images.

const bgImage1, bgImage2, bgImage3 = "example.com/shelf:v1", "example.com/shelf:v2", "example.com/shelf:v3"

// setupBlueGreenTarget is Deployment checkout of 4 available pods on v1 labelled for
// blue-green, its two Services, the watchers and an agent; then the Canary of spec is created
// and the test waits until it holds the Deployment.
func setupBlueGreenTarget(t *testing.T, edit func(*v1alpha1.CanaryBlueGreen, *v1alpha1.CanarySpec)) *depTargetEnv {
	t.Helper()
	e := &depTargetEnv{env: &env{Env: e2eenv.Setup(t)}}
	labels := map[string]string{"app": "checkout"}
	tmpl := podTemplate(map[string]string{"app": "checkout", v1alpha1.LabelBlueGreen: stableName}, bgImage1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: stableName},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](depReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: tmpl,
		},
	}
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{activeService, previewService} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		if _, err := e.Kube.CoreV1().Services(e.NS).Create(e.Ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitDeployments("Deployment checkout to have 4 available pods", func(d, _ *appsv1.Deployment) bool {
		return d != nil && d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == depReplicas &&
			d.Status.UpdatedReplicas == depReplicas && d.Status.Replicas == depReplicas
	})
	pods := e.WatchPods("capacity", "app=checkout", func(pods map[types.UID]*corev1.Pod) []string {
		return checkBlueGreenCapacity(e.env, pods)
	})
	t.Cleanup(func() { pods.Verify(t) })
	w := invariant.OneTemplate(e.Ctx, e.Kube, e.NS, activeService, func(p *corev1.Pod) string { return p.Spec.Containers[0].Image })
	w.OnViolation(func(v string) {
		t.Errorf("active Service: %s", v)
		e.Cancel()
	})
	t.Cleanup(func() {
		w.Stop()
		t.Logf("active Service watcher: %d EndpointSlice states, at most %s", w.Events(), w.Worst())
	})
	e.startAgent()
	e.run = pluginexec.New(t, e.Ctx, e.Cluster.Kubeconfig, e.NS)

	bg := &v1alpha1.CanaryBlueGreen{ActiveService: activeService, PreviewService: previewService}
	spec := v1alpha1.CanarySpec{
		Replicas:  depReplicas,
		TargetRef: &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: stableName},
		BlueGreen: bg,
	}
	if edit != nil {
		edit(bg, &spec)
	}
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitHolding()
	return e
}

// checkBlueGreenCapacity is the capacity invariant of a blue-green release: at least replicas
// available pods (ready, not terminating), at most twice replicas pods (terminating ones
// included).
func checkBlueGreenCapacity(e *env, pods map[types.UID]*corev1.Pod) []string {
	available, running := 0, 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		running++
		if e2eenv.PodReady(p) && p.DeletionTimestamp == nil {
			available++
		}
	}
	var out []string
	if available < depReplicas {
		out = append(out, fmt.Sprintf("%d available pods < replicas = %d", available, depReplicas))
	}
	if running > 2*depReplicas {
		out = append(out, fmt.Sprintf("%d pods > 2 × replicas = %d", running, 2*depReplicas))
	}
	if out != nil {
		e.Cancel()
	}
	return out
}

// waitHolding waits until the Canary holds Deployment checkout with nothing to release, both
// Services on its pods.
func (e *depTargetEnv) waitHolding() {
	e.T.Helper()
	e.waitCanary("the Canary to hold Deployment checkout", func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
		p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
		return c.Status.ObservedGeneration == c.Generation && p != nil && p.Reason == v1alpha1.ReasonHolding && tmp == nil && d.Spec.Paused
	})
	e.waitImageEndpoints(activeService, stableName, bgImage1)
	e.waitImageEndpoints(previewService, stableName, bgImage1)
}

// waitImageEndpoints waits until service's ready endpoints are depReplicas pods of Deployment
// deployment, all on image, and no other.
func (e *depTargetEnv) waitImageEndpoints(service, deployment, image string) {
	e.T.Helper()
	e2eenv.WaitFor(e.T, e.Ctx, fmt.Sprintf("Service %s to select the %d pods of %s on %s only", service, depReplicas, deployment, image),
		func(ctx context.Context) (bool, string, error) {
			got, err := e.endpoints(ctx, service) // by Deployment, from the pod names
			if err != nil {
				return false, err.Error(), nil
			}
			images := e.images()
			return len(got) == 1 && got[deployment] == depReplicas && images[image] >= depReplicas,
				fmt.Sprintf("ready endpoints by Deployment %v, pods by image %v", got, images), nil
		})
}

// waitPausedForPromotion waits until the preview of image is up behind the preview Service and
// the Canary waits for promote, the active Service still on the Deployment's v1 pods.
func (e *depTargetEnv) waitPausedForPromotion(image string) *v1alpha1.Canary {
	e.T.Helper()
	c := e.waitPhase(v1alpha1.CanaryPaused)
	e.waitImageEndpoints(previewService, canaryName, image)
	e.waitImageEndpoints(activeService, stableName, bgImage1)
	if bg := c.Status.BlueGreen; bg == nil || bg.Active != stableName || bg.Preview != canaryName {
		e.T.Errorf("status.blueGreen %+v, want active %s, preview %s", bg, stableName, canaryName)
	}
	return c
}

// waitRolledBackTo waits until an abort left Deployment checkout held on image with every
// replica, both Services on its pods and no temporary Deployment.
func (e *depTargetEnv) waitRolledBackTo(image string) *v1alpha1.Canary {
	e.T.Helper()
	c := e.waitCanary("the release to roll back", func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
		return c.Status.ObservedGeneration == c.Generation && c.Status.Phase == v1alpha1.CanaryRolledBack && tmp == nil
	})
	e.checkHeld(image)
	e.waitImageEndpoints(activeService, stableName, image)
	return c
}

// A release promoted by hand with a passing pre-promotion check: the new template comes up on
// the temporary Deployment behind the preview Service, the active Service moves to it at once,
// the old pods go after the delay, and the hand-over ends with both Services on the
// Deployment's own pods on the new template.
func TestBlueGreenDeploymentTargetPromote(t *testing.T) {
	e := setupBlueGreenTarget(t, func(bg *v1alpha1.CanaryBlueGreen, s *v1alpha1.CanarySpec) {
		s.Analysis = []v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-succeed")}
		bg.PrePromotionAnalysis = []string{"smoke"}
		bg.ScaleDownDelaySeconds = ptr.To[int32](5)
	})
	e.kubectlSetImage(bgImage2)
	c := e.waitPausedForPromotion(bgImage2)
	e.promote(c)
	e.waitImageEndpoints(activeService, canaryName, bgImage2)
	c = e.waitCanary("the scale-down delay running", func(c *v1alpha1.Canary, d, _ *appsv1.Deployment) bool {
		return c.Status.BlueGreen != nil && c.Status.BlueGreen.ScaleDownTime != nil
	})
	scaleDown := c.Status.BlueGreen.ScaleDownTime.Time
	if d := e2eenv.Get(t, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), stableName); *d.Spec.Replicas != depReplicas {
		t.Errorf("Deployment checkout at %d replicas during the scale-down delay, want %d", *d.Spec.Replicas, depReplicas)
	}
	e.waitDeployments("Deployment checkout's old pods scaled down", func(d, _ *appsv1.Deployment) bool { return *d.Spec.Replicas == 0 })
	if now := time.Now(); now.Before(scaleDown.Add(-time.Second)) { // the status keeps whole seconds
		t.Errorf("the old pods scaled down at %s, before the scale-down time %s", now, scaleDown)
	}
	c = e.waitReleased(bgImage2)
	e.waitImageEndpoints(activeService, stableName, bgImage2)
	e.waitImageEndpoints(previewService, stableName, bgImage2)
	if !e.switchedTo(canaryName) {
		t.Error("no Event of the active Service switched to the temporary Deployment")
	}
	if c.Status.Abort != nil {
		t.Errorf("abort %+v", c.Status.Abort)
	}
}

// Aborts before the switch (spec.rollback while the preview waits for promote), then, on the
// next template, after it (during the scale-down delay): each time the active Service ends on
// the Deployment's own pods of v1, which were never scaled down, and the temporary Deployment
// goes.
func TestBlueGreenDeploymentTargetAbortBeforeAndAfterTheSwitch(t *testing.T) {
	e := setupBlueGreenTarget(t, func(bg *v1alpha1.CanaryBlueGreen, _ *v1alpha1.CanarySpec) {
		bg.ScaleDownDelaySeconds = ptr.To[int32](600)
	})
	e.kubectlSetImage(bgImage2)
	e.waitPausedForPromotion(bgImage2)
	e.patchSpec(`{"rollback":true}`)
	e.waitRolledBackTo(bgImage1)
	if e.switchedTo(canaryName) {
		t.Error("the active Service was switched to the temporary Deployment before any promote")
	}

	e.patchSpec(`{"rollback":false}`)
	e.kubectlSetImage(bgImage3)
	e.promote(e.waitPausedForPromotion(bgImage3))
	e.waitImageEndpoints(activeService, canaryName, bgImage3)
	e.patchSpec(`{"rollback":true}`)
	e.waitRolledBackTo(bgImage1)
	if d := e2eenv.Get(t, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), stableName); *d.Spec.Replicas != depReplicas {
		t.Errorf("Deployment checkout at %d replicas after the abort, want %d", *d.Spec.Replicas, depReplicas)
	}
}

// A failing pre-promotion check (the preview never gets live traffic) and a failing
// post-promotion one (the active Service switched back at once, to the Deployment's pods that
// were still up).
func TestBlueGreenDeploymentTargetAnalysisFailure(t *testing.T) {
	for _, post := range []bool{false, true} {
		t.Run(map[bool]string{false: "pre-promotion", true: "post-promotion"}[post], func(t *testing.T) {
			e := setupBlueGreenTarget(t, func(bg *v1alpha1.CanaryBlueGreen, s *v1alpha1.CanarySpec) {
				s.Analysis = []v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-fail")}
				if post {
					bg.PostPromotionAnalysis = []string{"smoke"}
				} else {
					bg.PrePromotionAnalysis = []string{"smoke"}
				}
				bg.AutoPromotionSeconds = ptr.To[int32](1)
				bg.ScaleDownDelaySeconds = ptr.To[int32](600)
			})
			e.kubectlSetImage(bgImage2)
			c := e.waitRolledBackTo(bgImage1)
			if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "smoke" {
				t.Errorf("abort %+v, want AnalysisFailed of smoke", a)
			}
			if got := e.switchedTo(canaryName); got != post {
				t.Errorf("the active Service was switched to the temporary Deployment: %v, want %v", got, post)
			}
			if post && c.Status.Abort != nil && c.Status.Abort.Step != v1alpha1.BlueGreenSwitchStep(&c.Spec) {
				t.Errorf("abort at step %d, want the switch step", c.Status.Abort.Step)
			}
		})
	}
}
