package canary

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
)

// A Deployment target whose Canary leaves spec.replicas out (docs/canary-targets.md,
// "Autoscaling"), under the moving-total invariant (maxSurge 1): between releases a person's
// `kubectl scale deploy/checkout --replicas=6` and then a real HorizontalPodAutoscaler on the
// Deployment (to 8) move the total, and the agent follows each without setting it back. A new
// template while that autoscaler scales the Deployment is refused at once (Degraded,
// AutoscaledDeployment, no canary Deployment made); with it gone the release starts with the
// total of 8 recorded in status.releaseReplicas, and an autoscaler on the Deployment created
// while step 1 (25%: 2 of 8) waits is refused too, nothing written, the release resuming from
// step 1 once it is gone. The release completes with 8 pods on the new template, and nothing is
// a contest.
func TestDeploymentTargetWithoutReplicasFollowsItsScale(t *testing.T) {
	e := &env{Env: e2eenv.Setup(t)}
	e.createCheckout(4)
	w := invariant.ReleaseFollowing(e.Ctx, e.Kube, e.NS, "app=checkout", 4, 1, 0)
	failOnViolation(e.Env, w)
	e.startAgent()
	e2eenv.Create(t, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.CanarySpec{
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: stableName},
			MaxSurge:  ptr.To(intstr.FromInt32(1)),
			Steps: []v1alpha1.CanaryStep{
				step(intstr.FromString("25%"), &v1alpha1.CanaryPause{}),
				step(intstr.FromString("100%"), nil),
			},
		},
	})
	e.waitProgressing(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	held := func(total int32) {
		t.Helper()
		e.waitCanary("the held Deployment followed at "+itoa(total), func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
			return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Replicas == total && c.Status.ReleaseReplicas == 0 &&
				d != nil && d.Spec.Paused && ptr.Deref(d.Spec.Replicas, 1) == total && d.Status.AvailableReplicas == total && tmp == nil
		})
	}

	w.Expect(6)
	kubectl(t, e.Env, "scale", "deploy/"+stableName, "--replicas=6")
	held(6)
	w.Follow(6)

	metricsAdapter(t).Set(e.NS, queueMetric, 8)
	w.Expect(8)
	createHPA(e.Env, autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: stableName})
	waitHPA(e.Env, stableName, 8)
	held(8)
	w.Follow(8)

	// A new template while the autoscaler scales the Deployment: refused, nothing made.
	e2eenv.Update(t, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), stableName, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "example.com/shelf:v2"
	})
	c := e.waitCanary("the release to be refused", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryDegraded
	})
	wantAutoscaledDeployment(t, c)
	if _, tmp, err := e.deployments(); err != nil || tmp != nil {
		t.Errorf("refused release: canary Deployment %v (%v), want none", tmp != nil, err)
	}
	deleteHPA(e.Env, stableName)

	c = e.waitCanary("step 1 (2 of the 8 recorded) to wait for promotion", func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
		return waitingBatch(c) == 1 && c.Status.ReleaseReplicas == 8 && c.Status.CanaryReplicas == 2 && c.Status.StableReplicas == 6 &&
			d != nil && tmp != nil && d.Status.AvailableReplicas == 6 && tmp.Status.AvailableReplicas == 2
	})
	// An autoscaler on the Deployment mid-release, wanting what the Deployment has (6): refused,
	// the release stays where it was.
	metricsAdapter(t).Set(e.NS, queueMetric, 6)
	createHPA(e.Env, autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: stableName})
	c = e.waitCanary("the autoscaler mid-release to be refused", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryDegraded
	})
	wantAutoscaledDeployment(t, c)
	if c.Status.ReleaseReplicas != 8 || c.Status.CurrentBatch != 1 {
		t.Errorf("refused mid-release: releaseReplicas %d at batch %d, want 8 at 1", c.Status.ReleaseReplicas, c.Status.CurrentBatch)
	}
	deleteHPA(e.Env, stableName)
	c = e.waitCanary("step 1 to wait again", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 1 && c.Status.Phase != v1alpha1.CanaryDegraded
	})
	e.promote(c)
	c = e.waitCanary("the release to complete with 8 pods on v2", func(c *v1alpha1.Canary, d, tmp *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Replicas == 8 && c.Status.ReleaseReplicas == 0 && tmp == nil &&
			d != nil && ptr.Deref(d.Spec.Replicas, 1) == 8 && d.Status.AvailableReplicas == 8 && d.Status.UpdatedReplicas == 8
	})
	if c.Spec.Replicas != 0 {
		t.Errorf("spec.replicas %d, want it left out", c.Spec.Replicas)
	}
	w.Stop()
	if n := w.Count(); n > 0 {
		t.Errorf("%d invariant violations", n)
	}
	t.Logf("invariant watcher: %d pod states, worst %s", w.Events(), w.Worst())
	noContest(e.Env)
}

// noContest fails the test on any contest or refused spec the Canary reported in an Event.
func noContest(e *e2eenv.Env) {
	e.T.Helper()
	events, err := e.Kube.CoreV1().Events(e.NS).List(e.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Canary,involvedObject.name=" + name})
	if err != nil {
		e.T.Fatal(err)
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Reason, "Contested") || ev.Reason == v1alpha1.ReasonInvalidSpec {
			e.T.Errorf("Event %s: %s", ev.Reason, ev.Message)
		}
	}
}

// createCheckout makes Deployment checkout of replicas pods of example.com/shelf:v1 and waits
// until they are available.
func (e *env) createCheckout(replicas int32) {
	e.T.Helper()
	labels := map[string]string{"app": "checkout"}
	e2eenv.Create(e.T, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: stableName},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, "example.com/shelf:v1"),
		},
	})
	e.waitDeployments("Deployment checkout to have "+itoa(replicas)+" available pods", func(d, _ *appsv1.Deployment) bool {
		return d != nil && d.Status.AvailableReplicas == replicas && d.Status.UpdatedReplicas == replicas
	})
}

// wantAutoscaledDeployment fails unless the Canary is Degraded for the autoscaler on
// Deployment checkout, with the message docs/canary-targets.md documents.
func wantAutoscaledDeployment(t *testing.T, c *v1alpha1.Canary) {
	t.Helper()
	cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonAutoscaledDeployment ||
		!strings.Contains(cond.Message, `HorizontalPodAutoscaler "checkout" scales Deployment "checkout"`) {
		t.Errorf("Degraded condition %+v, want AutoscaledDeployment naming HorizontalPodAutoscaler checkout", cond)
	}
}

func deleteHPA(e *e2eenv.Env, hpa string) {
	e.T.Helper()
	if err := e.Kube.AutoscalingV2().HorizontalPodAutoscalers(e.NS).Delete(e.Ctx, hpa, metav1.DeleteOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// kubectl runs the real kubectl in the test's namespace.
func kubectl(t *testing.T, e *e2eenv.Env, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(e.Ctx, pluginexec.Kubectl(t), append([]string{"-n", e.NS}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Cluster.Kubeconfig)
	out, err := cmd.CombinedOutput()
	t.Logf("$ kubectl %s\n%s", strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
