package analysis

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/podorder"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// canaryDeployment runs 2 pods of image, labelled app=name.
func canaryDeployment(t *testing.T, kube kubernetes.Interface, ns, name, image string) {
	t.Helper()
	replicas := int32(2)
	sel := map[string]string{"app": name}
	_, err := kube.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// podHealthEnv is a provider environment with a pod lister of the namespace, as the agent has.
func podHealthEnv(t *testing.T, kube kubernetes.Interface, ns string) analysis.Env {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	pods := factory.Core().V1().Pods().Lister()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return analysis.Env{Pods: pods}
}

// waitPods polls the app's pods until ok says they are as wanted.
func waitPods(t *testing.T, kube kubernetes.Interface, ns, app, what string, ok func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	e2eenv.WaitFor(t, context.Background(), what, func(ctx context.Context) (bool, string, error) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err.Error(), nil
		}
		pods = list.Items
		return ok(pods), fmt.Sprintf("%d pods: %v", len(pods), podStates(pods)), nil
	})
	return pods
}

func podStates(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s ready=%v restarts=%d", p.Name, !notReady(p), restarts(p)))
	}
	return out
}

func restarts(p corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

func notReady(p corev1.Pod) bool { return !podorder.IsReady(&p) }

// Pods of a "crashloop" image keep restarting and are never ready (the kwok stages
// pod-crashloop-*), and podHealth fails on them.
func TestPodHealthCatchesCrashLoop(t *testing.T) {
	e, owner := namespace(t)
	kube, ns := e.Kube, e.NS
	canaryDeployment(t, kube, ns, "crash", "example.com/app:crashloop")

	first := waitPods(t, kube, ns, "crash", "2 crash-looping pods with a restart", func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || !notReady(p) || restarts(p) < 1 {
				return false
			}
		}
		return len(pods) == 2
	})
	waitPods(t, kube, ns, "crash", "restarts going up", func(pods []corev1.Pod) bool {
		for _, p := range pods {
			for _, f := range first {
				if p.Name == f.Name && restarts(p) > restarts(f) && notReady(p) {
					return true
				}
			}
		}
		return false
	})

	// Tolerate the pods being not ready, so that it is the restarts that fail the check.
	count := int32(3)
	check := &v1alpha1.AnalysisCheck{
		Name: "pods", Interval: &metav1.Duration{Duration: time.Second}, Count: &count,
		Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{MaxRestarts: 1, MaxNotReady: 2}},
	}
	p, err := podHealthEnv(t, kube, ns).Provider(check, analysis.Target{Namespace: ns, Owner: owner, CanaryPods: labels.SelectorFromSet(labels.Set{"app": "crash"})})
	if err != nil {
		t.Fatal(err)
	}
	st := run(t, check, p)
	if st.Phase != v1alpha1.AnalysisFailed || !strings.Contains(st.Message, "pods:2") || !strings.Contains(st.Message, "notReady:2") {
		t.Fatalf("phase %s (%s); want Failed on 2 pods restarting", st.Phase, st.Message)
	}
}

// The same check passes on pods that run normally.
func TestPodHealthPassesHealthyPods(t *testing.T) {
	e, owner := namespace(t)
	kube, ns := e.Kube, e.NS
	canaryDeployment(t, kube, ns, "fine", "example.com/app:v2")
	waitPods(t, kube, ns, "fine", "2 ready pods", func(pods []corev1.Pod) bool {
		return len(pods) == 2 && !notReady(pods[0]) && !notReady(pods[1])
	})
	count := int32(3)
	check := &v1alpha1.AnalysisCheck{
		Name: "pods", Interval: &metav1.Duration{Duration: time.Second}, Count: &count,
		Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{MaxRestarts: 1}},
	}
	p, err := podHealthEnv(t, kube, ns).Provider(check, analysis.Target{Namespace: ns, Owner: owner, CanaryPods: labels.SelectorFromSet(labels.Set{"app": "fine"})})
	if err != nil {
		t.Fatal(err)
	}
	st := run(t, check, p)
	if st.Phase != v1alpha1.AnalysisSuccessful || st.Successful != 3 {
		t.Fatalf("phase %s (%s) %v; want Successful", st.Phase, st.Message, values(st))
	}
}
