package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// These tests pin down what kwok's stages (test/localcluster/stages.yaml)
// promise in place of a kubelet; controllers under test rely on it.

const gate = corev1.PodConditionType("example.com/in-place-update")

func createPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	tmpl := podTemplate("solo", "registry.invalid/solo:v1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solo", Labels: tmpl.Labels}, Spec: tmpl.Spec}
	if mutate != nil {
		mutate(pod)
	}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// waitPod waits until the pod satisfies cond and returns it.
func waitPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	e2eenv.WaitFor(t, ctx, "pod "+what, func(ctx context.Context) (bool, string, error) {
		var err error
		if pod, err = cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, "", err
		}
		state, _ := json.Marshal(pod.Status)
		return cond(pod), string(state), nil
	})
	return pod
}

func setGate(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string, status corev1.ConditionStatus) {
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, gate, status)
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

func TestInPlaceImageUpdateRestartsContainer(t *testing.T) {
	t.Parallel()
	ctx, cs, ns := setup(t)
	createPod(t, ctx, cs, ns, nil)
	before := waitPod(t, ctx, cs, ns, "solo", "Ready", e2eenv.PodReady)
	if got := before.Status.ContainerStatuses[0]; got.Image != "registry.invalid/solo:v1" || got.RestartCount != 0 {
		t.Fatalf("container status before the update: image %s, restarts %d", got.Image, got.RestartCount)
	}

	patch := `{"spec":{"containers":[{"name":"app","image":"registry.invalid/solo:v2"}]}}`
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "solo", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after := waitPod(t, ctx, cs, ns, "solo", "running the new image", func(p *corev1.Pod) bool {
		return p.Status.ContainerStatuses[0].Image == "registry.invalid/solo:v2"
	})
	got := after.Status.ContainerStatuses[0]
	if got.RestartCount != 1 || !got.Ready || got.State.Running == nil {
		t.Errorf("after the update: restarts %d, ready %v, running %v; want 1 restart, ready and running", got.RestartCount, got.Ready, got.State.Running != nil)
	}
	if !e2eenv.PodReady(after) {
		t.Error("pod not Ready after an in-place update")
	}
	if after.UID != before.UID || after.Status.PodIP != before.Status.PodIP {
		t.Error("the pod was replaced, not updated in place")
	}
}

func TestReadinessGateHoldsReady(t *testing.T) {
	t.Parallel()
	ctx, cs, ns := setup(t)
	createPod(t, ctx, cs, ns, func(p *corev1.Pod) {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate}}
	})
	pod := waitPod(t, ctx, cs, ns, "solo", "Running", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning
	})
	if e2eenv.PodReady(pod) {
		t.Fatal("pod Ready while its readiness gate condition is missing")
	}
	if c := podCondition(pod, corev1.ContainersReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("ContainersReady = %v; want True", c)
	}
	if podCondition(pod, gate) != nil {
		t.Error("the stage set the readiness gate's condition, which belongs to the pod's controller")
	}

	setGate(t, ctx, cs, ns, "solo", corev1.ConditionTrue)
	waitPod(t, ctx, cs, ns, "solo", "Ready once the gate is True", e2eenv.PodReady)

	// An in-place update as a controller does it: close the gate, change the
	// image, wait for the new image, open the gate.
	setGate(t, ctx, cs, ns, "solo", corev1.ConditionFalse)
	waitPod(t, ctx, cs, ns, "solo", "not Ready once the gate is False", func(p *corev1.Pod) bool { return !e2eenv.PodReady(p) })
	patch := `{"spec":{"containers":[{"name":"app","image":"registry.invalid/solo:v2"}]}}`
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, "solo", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = waitPod(t, ctx, cs, ns, "solo", "running the new image", func(p *corev1.Pod) bool {
		return p.Status.ContainerStatuses[0].Image == "registry.invalid/solo:v2"
	})
	if e2eenv.PodReady(pod) {
		t.Error("pod Ready after its image changed while the gate is False")
	}
	setGate(t, ctx, cs, ns, "solo", corev1.ConditionTrue)
	waitPod(t, ctx, cs, ns, "solo", "Ready again once the gate is True", e2eenv.PodReady)
}
