package canary

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// depTargetTraffic is a fixture whose Canary releases Deployment checkout (2 pods of
// nginx:1.26, track: stable) through HTTPRoute checkout: step 1 is one pod at weight 50 with a
// one-minute pause, step 2 all. The stable Service selects track: stable, the canary Service
// stableSelector's labels with track: canary.
func depTargetTraffic(t *testing.T, stableSelector map[string]string) *trafficFixture {
	t.Helper()
	cn := depTargetCanary()
	cn.Spec.Steps[0].Weight = ptr.To[int32](50)
	cn.Spec.TrafficRouting = &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
		HTTPRoute: "checkout", StableService: "checkout-stable", CanaryService: "checkout-canary"}}
	stable := service("checkout-stable", "stable")
	stable.Spec.Selector = stableSelector
	return withTraffic(t, newFixture(t, cn, newStable(2)), trafficRoute(100, 0), stable, service("checkout-canary", "canary"))
}

// heldTrafficTarget holds Deployment checkout; the route keeps everything on the stable
// Service, as it was.
func heldTrafficTarget(t *testing.T) *trafficFixture {
	t.Helper()
	f := depTargetTraffic(t, map[string]string{"app": "checkout", "track": "stable"})
	f.tstep(writeSnapshot, `patch deployments checkout {"spec":{"paused":true}}`, writeStatus)
	f.status(v1alpha1.CanaryCompleted, 0)
	f.wantRoute(0, false)
	f.settled()
	return f
}

// The canary pods carry the canary Service's labels and lose the stable Service's: the two
// Services the user wrote hold them apart, and the agent writes neither.
func TestDeploymentTargetCanaryPodsMatchTheCanaryService(t *testing.T) {
	f := heldTrafficTarget(t)
	f.setImage("nginx:1.27")
	f.tstep(createCanaryDep, writeStatus) // no canary pod available: the route is not written
	f.wantRoute(0, false)
	tmp := f.deployment("checkout-canary")
	want := map[string]string{"app": "checkout", "track": "canary", v1alpha1.LabelCanaryName: "checkout"}
	for k, v := range want {
		if tmp.Spec.Selector.MatchLabels[k] != v || tmp.Spec.Template.Labels[k] != v {
			t.Errorf("canary Deployment selector %v, template labels %v: want %s=%s", tmp.Spec.Selector.MatchLabels, tmp.Spec.Template.Labels, k, v)
		}
	}
	if c := f.condition(); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("TrafficRoutingReady %+v", c)
	}
}

// A stable Service that would select the canary's pods too is refused: nothing of the release
// moves until the Services tell the pods apart.
func TestDeploymentTargetStableServiceSelectingTheCanary(t *testing.T) {
	f := depTargetTraffic(t, map[string]string{"app": "checkout"})
	f.tstep(writeSnapshot, `patch deployments checkout {"spec":{"paused":true}}`, writeStatus)
	f.setImage("nginx:1.27")
	f.tstep() // no canary Deployment
	c := f.condition()
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonServiceSelector ||
		!strings.Contains(c.Message, `stable Service "checkout-stable" also selects the canary Deployment's pods`) {
		t.Fatalf("TrafficRoutingReady %+v", c)
	}
}

// A release shifts the route's weights step by step; at the end the hand-over gives the
// traffic back to Deployment checkout as its pods on the new template become available, and
// the canary Deployment gives up pods only as far as the route lets them go.
func TestDeploymentTargetTrafficStepsAndHandOver(t *testing.T) {
	f := heldTrafficTarget(t)
	f.setImage("nginx:1.27")
	f.tstep(createCanaryDep, writeStatus)
	f.pods("checkout-canary", 1, 1, 1)
	f.tstep(routePatch(weightOps(50, 50)), writeStatus) // step 1's weight; checkout waits for the route
	f.wantRoute(50, false)
	f.tstep(`patch deployments checkout {"spec":{"replicas":1}}`, writeStatus)
	f.pods("checkout", 1, 1, 0)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryProgressing, 1, v1alpha1.BatchBaking, v1alpha1.BatchPending)

	f.clock.Step(time.Minute)
	f.tstep(`patch deployments checkout-canary {"spec":{"replicas":2}}`, writeStatus)
	f.pods("checkout-canary", 2, 2, 2)
	f.tstep(routePatch(weightOps(0, 100)), writeStatus) // step 2 complete: all to the canary
	f.wantRoute(100, false)
	f.tstep(`patch deployments checkout {"spec":{"replicas":0}}`, writeStatus)
	f.pods("checkout", 0, 0, 0)
	f.tstep(writeSnapshot, `patch deployments checkout {"spec":{"paused":false}}`, writeStatus)
	f.wantRoute(100, false)

	// The hand-over: checkout grows into the pod of room; the route gives it the share its
	// available pods carry, and only then does the canary Deployment give a pod up.
	f.tstep(`patch deployments checkout {"spec":{"paused":true}}`, `patch deployments checkout {"spec":{"replicas":1}}`, writeStatus)
	f.pods("checkout", 1, 1, 1)
	f.tstep(routePatch(weightOps(50, 50)), writeStatus)
	f.wantRoute(50, false)
	f.tstep(`patch deployments checkout-canary {"spec":{"replicas":1}}`, writeStatus)
	f.pods("checkout-canary", 1, 1, 1)
	f.tstep(`patch deployments checkout {"spec":{"replicas":2}}`, writeStatus)
	f.pods("checkout", 2, 2, 2)
	f.tstep(routePatch(weightOps(100, 0)), writeStatus)
	f.wantRoute(0, false)
	f.tstep(`patch deployments checkout-canary {"spec":{"replicas":0}}`, writeStatus)
	f.pods("checkout-canary", 0, 0, 0)
	f.tstep("delete deployments checkout-canary", writeStatus)
	f.status(v1alpha1.CanaryCompleted, 2, v1alpha1.BatchCompleted, v1alpha1.BatchCompleted)
	f.wantRoute(0, false)
	f.settled()
}

// Abort takes the canary's weight away in the rollback's first write, beside the template
// written back; the canary Deployment shrinks only once the route shows 0, then goes.
func TestDeploymentTargetTrafficAbort(t *testing.T) {
	f := heldTrafficTarget(t)
	f.setImage("nginx:1.27")
	f.tstep(createCanaryDep, writeStatus)
	f.pods("checkout-canary", 1, 1, 1)
	f.tstep(routePatch(weightOps(50, 50)), writeStatus)
	f.tstep(`patch deployments checkout {"spec":{"replicas":1}}`, writeStatus)
	f.pods("checkout", 1, 1, 0)
	f.tstep(writeStatus)

	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	f.tstep(routePatch(weightOps(100, 0)), "patch deployments checkout json", writeStatus)
	f.wantRoute(0, false)
	f.pods("checkout", 2, 2, 2)
	f.tstep(`patch deployments checkout-canary {"spec":{"replicas":0}}`, writeStatus)
	f.pods("checkout-canary", 0, 0, 0)
	f.tstep("delete deployments checkout-canary", writeStatus)
	if p := f.canary().Status.Phase; p != v1alpha1.CanaryRolledBack {
		t.Fatalf("phase %s: %s", p, f.canary().Status.Message)
	}
	f.wantRoute(0, false)
	f.settled()
}

// A Service missing while step 1 bakes holds the release (TrafficRoutingReady=False) without
// starting the step again: the canary pods' labels are unknown then, not changed.
func TestDeploymentTargetMissingServiceDoesNotRestartTheStep(t *testing.T) {
	f := heldTrafficTarget(t)
	f.setImage("nginx:1.27")
	f.tstep(createCanaryDep, writeStatus)
	f.pods("checkout-canary", 1, 1, 1)
	f.tstep(routePatch(weightOps(50, 50)), writeStatus)
	f.tstep(`patch deployments checkout {"spec":{"replicas":1}}`, writeStatus)
	f.pods("checkout", 1, 1, 0)
	f.tstep(writeStatus)
	f.status(v1alpha1.CanaryProgressing, 1, v1alpha1.BatchBaking, v1alpha1.BatchPending)

	if err := f.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("services"), ns, "checkout-canary"); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(serviceTTL) // the cached Service expires
	f.tstep(writeStatus)
	if c := f.condition(); c == nil || c.Reason != v1alpha1.ReasonServiceNotFound {
		t.Fatalf("TrafficRoutingReady %+v", c)
	}
	f.status(v1alpha1.CanaryProgressing, 1, v1alpha1.BatchBaking, v1alpha1.BatchPending)
}
