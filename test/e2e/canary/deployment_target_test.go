package canary

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
)

// A Canary whose targetRef is a Deployment (issue 18) holds the Deployment in Git paused, so
// that `kubectl set image deploy/checkout` alone starts a release: the new template runs on a
// temporary canary Deployment (checkout-canary) through the steps, then the Deployment rolls
// onto it while the canary pods still serve, and the canary Deployment is deleted. A pod
// watcher fails the test the moment fewer than replicas pods are available or more than
// replicas + maxSurge exist, through every step, hand-over and rollback.

const (
	depReplicas = 4
	depSurge    = 1
)

// depTargetEnv is a namespace with Deployment checkout of 4 available pods, a pod watcher and
// an agent running the canary controller.
type depTargetEnv struct {
	*env
	run *pluginexec.Runner
}

func setupDeploymentTarget(t *testing.T) *depTargetEnv {
	t.Helper()
	e := &depTargetEnv{env: &env{Env: e2eenv.Setup(t)}}
	labels := map[string]string{"app": "checkout"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: stableName},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](depReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, "example.com/shelf:v1"),
		},
	}
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitDeployments("Deployment checkout to have 4 available pods", func(d, _ *appsv1.Deployment) bool {
		return d != nil && d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == depReplicas &&
			d.Status.UpdatedReplicas == depReplicas && d.Status.Replicas == depReplicas
	})
	var ready atomic.Bool
	w := e.WatchPods("capacity", "app=checkout", func(pods map[types.UID]*corev1.Pod) []string {
		if !ready.Load() {
			return nil
		}
		return e.checkCapacity(pods)
	})
	ready.Store(true)
	t.Cleanup(func() { w.Verify(t) })
	e.startAgent()
	e.run = pluginexec.New(t, e.Ctx, e.Cluster.Kubeconfig, e.NS)
	return e
}

// checkCapacity is the invariant: at least replicas available pods (ready, not terminating),
// at most replicas + maxSurge pods (terminating ones included).
func (e *depTargetEnv) checkCapacity(pods map[types.UID]*corev1.Pod) []string {
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
	if running > depReplicas+depSurge {
		out = append(out, fmt.Sprintf("%d pods > replicas + maxSurge = %d", running, depReplicas+depSurge))
	}
	if out != nil {
		e.Cancel()
	}
	return out
}

// kubectlSetImage runs the real `kubectl set image deploy/checkout checkout=IMAGE`.
func (e *depTargetEnv) kubectlSetImage(image string) {
	e.T.Helper()
	cmd := exec.CommandContext(e.Ctx, e.run.Kubectl, "-n", e.NS, "set", "image", "deploy/"+stableName, "checkout="+image)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Cluster.Kubeconfig)
	out, err := cmd.CombinedOutput()
	e.T.Logf("$ kubectl set image deploy/%s checkout=%s\n%s", stableName, image, out)
	if err != nil {
		e.T.Fatalf("kubectl set image: %v", err)
	}
}

// images counts the pods of Deployment checkout and of its canary Deployment by image.
func (e *depTargetEnv) images() map[string]int {
	e.T.Helper()
	pods, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: "app=checkout"})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out
}

// waitStep waits until step k of the Canary bakes (its timed pause).
func (e *depTargetEnv) waitStep(k int32, image string) *v1alpha1.Canary {
	e.T.Helper()
	return e.waitCanary(fmt.Sprintf("step %d to bake with %s", k, image), func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == k && c.Status.Batches[k-1].State == v1alpha1.BatchBaking &&
			tmp != nil && tmp.Spec.Template.Spec.Containers[0].Image == image
	})
}

// waitReleased waits until the release of image completed: the temporary canary Deployment is
// gone and Deployment checkout runs image on every pod, held paused again.
func (e *depTargetEnv) waitReleased(image string) *v1alpha1.Canary {
	e.T.Helper()
	c := e.waitCanary("the release of "+image+" to complete", func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && tmp == nil &&
			d.Spec.Template.Spec.Containers[0].Image == image
	})
	e.checkHeld(image)
	return c
}

// checkHeld checks that Deployment checkout is paused with every pod on image.
func (e *depTargetEnv) checkHeld(image string) {
	e.T.Helper()
	e.waitDeployments("Deployment checkout paused with 4 available pods", func(d, _ *appsv1.Deployment) bool {
		return d.Spec.Paused && d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == depReplicas
	})
	e.Eventually("every pod on "+image, func() (bool, string) {
		got := e.images()
		return got[image] == depReplicas && len(got) == 1, fmt.Sprint(got)
	})
}

// Three releases in a row of Deployment checkout through one Canary, each started by `kubectl
// set image` alone and each with a timed pause: the first completes (followed by `kubectl
// workload status -w` to its end), the second's check fails and the previous template is
// restored, the third (started after that rollback) completes.
func TestDeploymentTargetReleases(t *testing.T) {
	e := setupDeploymentTarget(t)
	c := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.CanarySpec{
			Replicas:  depReplicas,
			MaxSurge:  ptr.To(intstr.FromInt32(depSurge)),
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: stableName},
			Steps: []v1alpha1.CanaryStep{
				step(intstr.FromInt32(1), pauseFor(10*time.Second), "smoke"),
				step(intstr.FromString("100%"), nil),
			},
			Analysis: []v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-succeed")},
		},
	}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitCanary("the Canary to hold Deployment checkout", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
		return c.Status.ObservedGeneration == c.Generation && c.Status.Phase == v1alpha1.CanaryCompleted && p != nil && p.Reason == v1alpha1.ReasonHolding
	})
	e.checkHeld("example.com/shelf:v1")
	if res := e.run.Run("status", "deploy/"+stableName); !strings.Contains(res.Out+res.Err, "canary/"+name) {
		t.Errorf("status deploy/%s does not name canary/%s", stableName, name)
	}

	// Release 1: v2, followed by status -w.
	e.kubectlSetImage("example.com/shelf:v2")
	e.waitStep(1, "example.com/shelf:v2")
	// The step bakes from the moment its canary pod is available; the stable pod it replaces is
	// deleted by the Deployment's controller a moment later (the capacity watcher holds the
	// bounds meanwhile), so the pods are waited for, within the step's 10 s pause.
	e.waitCanary("step 1's pause with 1 pod on v2 and 3 on v1", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		got := e.images()
		return c.Status.CurrentBatch == 1 && got["example.com/shelf:v2"] == 1 && got["example.com/shelf:v1"] == depReplicas-1
	})
	follow := e.run.Start("status", "-w", "canary/"+name)
	time.Sleep(2 * time.Second) // within the 10 s pause: the release is not over
	if follow.Exited() {
		t.Fatalf("status -w exited during step 1 of the release: %v", follow.Lines())
	}
	code, stderr := follow.Wait(t, e2eenv.Safety)
	if code != 0 {
		t.Fatalf("status -w exited %d: %s", code, stderr)
	}
	// It exits only once the release is over: the canary Deployment is gone already.
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, canaryName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("status -w exited 0 while deploy/%s still exists (%v)", canaryName, err)
	}
	e.waitReleased("example.com/shelf:v2")
	e.WaitEvent(v1alpha1.EventAnalysisPassed)

	// Release 2: v3, whose check fails at step 1: v2's template is written back.
	e.patchSpec(`{"analysis":[` + mustJSON(t, jobCheck("example.com/smoke:job-fail")) + `]}`)
	e.kubectlSetImage("example.com/shelf:v3")
	c = e.waitCanary("release 2 to roll back by itself", func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.Abort != nil && tmp == nil
	})
	if a := c.Status.Abort; a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "smoke" || a.Step != 1 {
		t.Errorf("abort %+v, want AnalysisFailed of smoke at step 1", a)
	}
	d := e2eenv.Get(t, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), stableName)
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "example.com/shelf:v2" {
		t.Errorf("after the rollback Deployment checkout's template runs %s, want v2's back", img)
	}
	e.checkHeld("example.com/shelf:v2")

	// Release 3: v4, through the plugin's set image this time, with a passing check again.
	e.patchSpec(`{"analysis":[` + mustJSON(t, jobCheck("example.com/smoke:job-succeed")) + `]}`)
	if res := e.run.Run("set", "image", "deploy/"+stableName, "checkout=example.com/shelf:v4"); res.Code != 0 ||
		!strings.Contains(res.Out, "canary/"+name+" releases it") {
		t.Fatalf("set image deploy/%s: exit %d, %s%s", stableName, res.Code, res.Out, res.Err)
	}
	e.waitStep(1, "example.com/shelf:v4")
	c = e.waitReleased("example.com/shelf:v4")
	if c.Status.Abort != nil {
		t.Errorf("abort %+v after release 3", c.Status.Abort)
	}
}
