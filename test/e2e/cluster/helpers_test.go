package cluster

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// setup returns a client and a fresh namespace, deleted after the test.
func setup(t *testing.T) (context.Context, kubernetes.Interface, string) {
	t.Helper()
	e := e2eenv.Setup(t)
	return e.Ctx, e.Kube, e.NS
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func labels(app string) map[string]string { return map[string]string{"app": app} }

func podTemplate(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: image}},
			// The fake kubelet deletes pods at once anyway; this keeps a
			// real kubelet from making the same test slow.
			TerminationGracePeriodSeconds: new(int64),
		},
	}
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels(name)},
			Template: podTemplate(name, "registry.invalid/"+name+":v1"),
		},
	}
}

// readyPods lists the pods of app and counts the Ready ones.
func readyPods(ctx context.Context, cs kubernetes.Interface, ns, app string) ([]corev1.Pod, int, error) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, 0, err
	}
	ready := 0
	for i := range list.Items {
		if e2eenv.PodReady(&list.Items[i]) {
			ready++
		}
	}
	return list.Items, ready, nil
}

// waitDeploymentReady waits until the deployment has exactly n pods, all
// Ready, as seen both by its status and by listing the pods.
func waitDeploymentReady(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	e2eenv.WaitFor(t, ctx, fmt.Sprintf("deployment %s to have %d ready pods", name, n), func(ctx context.Context) (bool, string, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		var ready int
		if pods, ready, err = readyPods(ctx, cs, ns, name); err != nil {
			return false, "", err
		}
		state := fmt.Sprintf("status.readyReplicas=%d, pods=%d, ready pods=%d", d.Status.ReadyReplicas, len(pods), ready)
		return d.Status.ReadyReplicas == int32(n) && len(pods) == n && ready == n, state, nil
	})
	return pods
}
