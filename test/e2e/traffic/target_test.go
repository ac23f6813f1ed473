package traffic

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// createTargetCanary creates Canary web releasing Deployment web in place (targetRef) through
// route web: step 1 one pod at weight 25, paused; step 2 half the pods at weight 50, paused;
// then everything. The Services are the pair's: track: stable and track: canary.
func (e *env) createTargetCanary() {
	e.T.Helper()
	e.createTarget(func(s *v1alpha1.CanarySpec) {
		s.MaxSurge = ptr.To(intstr.FromInt32(1))
		s.Steps = []v1alpha1.CanaryStep{
			{Replicas: intstr.FromInt32(1), Weight: ptr.To[int32](25), Pause: &v1alpha1.CanaryPause{}},
			{Replicas: intstr.FromString("50%"), Weight: ptr.To[int32](50), Pause: &v1alpha1.CanaryPause{}},
			{Replicas: intstr.FromString("100%")},
		}
	})
}

// createTarget creates Canary web releasing Deployment web in place (targetRef) through route
// web, its spec completed by edit, and waits until the Canary holds the Deployment paused.
func (e *env) createTarget(edit func(*v1alpha1.CanarySpec)) {
	e.T.Helper()
	cn := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.CanarySpec{
			Replicas:  replicas,
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: "Deployment", Name: "web"},
			TrafficRouting: &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
				HTTPRoute: "web", StableService: services.Stable, CanaryService: services.Canary}},
		},
	}
	edit(&cn.Spec)
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, cn, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
	e.Eventually("Deployment web held (paused)", func() (bool, string) {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := e.canary()
		return d.Spec.Paused && c.Status.Phase == v1alpha1.CanaryCompleted, fmt.Sprintf("paused %v, canary %s: %s", d.Spec.Paused, c.Status.Phase, c.Status.Message)
	})
}

// setImage changes Deployment web's image, as kubectl set image does: the next release.
func (e *env) setImage(image string) {
	e.T.Helper()
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, image)
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Patch(e.Ctx, "web", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// A targetRef: Deployment release with traffic routing: the route carries each step's weight
// (the canary Service selects the temporary canary Deployment's pods, which the agent labels
// track: canary), 100% on the canary once every step is complete, and 0 again once Deployment
// web serves every pod on the new template and the canary Deployment is gone.
func TestDeploymentTargetWeightsAndHandOver(t *testing.T) {
	e := setup(t)
	e.createService(services.Stable, "stable")
	e.createService(services.Canary, "canary")
	e.createRoute()
	e.createTargetCanary()
	e.waitRoute(0, false)

	e.setImage("nginx:1.27")
	e.waitPhase(v1alpha1.CanaryPaused, 1)
	e.waitRoute(25, false)
	e.promote(1)
	e.waitPhase(v1alpha1.CanaryPaused, 2)
	e.waitRoute(50, false)
	e.promote(2)
	e.waitPhase(v1alpha1.CanaryCompleted, 3)
	e.waitRoute(0, false)
	if n := e.deploymentReplicas(v1alpha1.TemporaryCanaryName("web")); n != -1 {
		t.Errorf("canary Deployment still there (%d replicas) after the release", n)
	}
	d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" || d.Status.AvailableReplicas != replicas || ptr.Deref(d.Spec.Replicas, 0) != replicas {
		t.Errorf("Deployment web runs %s with %d of %d pods available, want nginx:1.27 with %d", img, d.Status.AvailableReplicas, ptr.Deref(d.Spec.Replicas, 0), replicas)
	}
	e.waitEventReason(v1alpha1.EventTrafficShifted, 4)
}

// Abort at step 2 sends the canary nothing before any canary pod goes (the watcher fails the
// test otherwise), and the Deployment's own template comes back.
func TestDeploymentTargetAbortRoutesAwayFirst(t *testing.T) {
	e := setup(t)
	e.createService(services.Stable, "stable")
	e.createService(services.Canary, "canary")
	e.createRoute()
	w := e.watchRouteAndPods()
	e.createTargetCanary()
	e.setImage("nginx:1.27")
	e.waitPhase(v1alpha1.CanaryPaused, 1)
	e.waitRoute(25, false)
	e.promote(1)
	e.waitPhase(v1alpha1.CanaryPaused, 2)
	e.waitRoute(50, false)

	e.patchCanary(`{"spec":{"rollback":true}}`)
	e.waitPhase(v1alpha1.CanaryRolledBack, 0)
	e.waitRoute(0, false)
	e.Eventually("canary Deployment gone", func() (bool, string) {
		n := e.deploymentReplicas(v1alpha1.TemporaryCanaryName("web"))
		return n == -1, fmt.Sprintf("canary Deployment at %d", n)
	})
	if n := w.verify(t); n == 0 {
		t.Error("no canary pod was removed: the watcher checked nothing")
	}
	d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" || !d.Spec.Paused {
		t.Errorf("Deployment web at %s (paused %v), want nginx:1.26 back, held paused", img, d.Spec.Paused)
	}
}
