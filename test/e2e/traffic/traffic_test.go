package traffic

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The route carries each step's weight, the header route only during step 1, and 100% on the
// canary Service once the release completes; no canary pod goes while it has traffic.
func TestWeightsAtEveryStep(t *testing.T) {
	e := setup(t)
	e.createService(services.Stable, "stable")
	e.createService(services.Canary, "canary")
	e.createRoute()
	w := e.watchRouteAndPods()
	e.createCanary()

	e.waitPhase(v1alpha1.CanaryPaused, 1)
	e.waitRoute(10, true)
	obs, _ := e.route()
	if len(obs.Matches) != 1 || obs.Matches[0].Name != "x-canary" || obs.Matches[0].Value != "always" {
		t.Errorf("header rule matches %+v, want x-canary: always", obs.Matches)
	}
	e.promote(1)
	e.waitPhase(v1alpha1.CanaryPaused, 2)
	e.waitRoute(50, false)
	e.promote(2)
	e.waitPhase(v1alpha1.CanaryCompleted, 3)
	e.waitRoute(100, false)
	if n := e.deploymentReplicas("web"); n != 0 {
		t.Errorf("stable Deployment at %d replicas after completion, want 0", n)
	}
	w.verify(t)
}

// Abort at each step, and after completion, sends the canary nothing before any canary pod goes:
// the watcher fails the test if a canary pod is removed while the route still sends it
// traffic (TestRouteWatcherVerify shows it can). After completion no stable pod is left, so the
// canary keeps its weight until one is available.
func TestAbortAtEachStep(t *testing.T) {
	for _, k := range []int32{1, 2, 3} {
		t.Run(fmt.Sprintf("step %d", k), func(t *testing.T) {
			e := setup(t)
			e.createService(services.Stable, "stable")
			e.createService(services.Canary, "canary")
			e.createRoute()
			w := e.watchRouteAndPods()
			e.createCanary()
			for i := int32(1); i <= k; i++ {
				if i < 3 {
					e.waitPhase(v1alpha1.CanaryPaused, i)
				} else {
					e.waitPhase(v1alpha1.CanaryCompleted, i)
				}
				if i < k {
					e.promote(i)
				}
			}
			e.waitRoute([]int32{0, 10, 50, 100}[k], k == 1)
			e.patchCanary(`{"spec":{"rollback":true}}`)
			e.waitPhase(v1alpha1.CanaryRolledBack, 0)
			e.waitRoute(0, false)
			e.Eventually("canary pods gone", func() (bool, string) {
				n := e.deploymentReplicas("web-canary")
				return n == 0, fmt.Sprintf("canary Deployment at %d", n)
			})
			if n := w.verify(t); n == 0 {
				t.Error("no canary pod was removed: the watcher checked nothing")
			}
		})
	}
}

// A missing route, then a missing Service, is a TrafficRoutingReady=False condition and nothing
// is created or scaled; once they exist, the release goes on.
func TestMissingRouteAndServiceChangeNothing(t *testing.T) {
	e := setup(t)
	e.createService(services.Stable, "stable")
	e.createCanary()
	e.waitCondition(v1alpha1.ReasonHTTPRouteNotFound)
	e.createRoute()
	e.waitCondition(v1alpha1.ReasonServiceNotFound)
	if n := e.deploymentReplicas("web-canary"); n != -1 {
		t.Errorf("canary Deployment created (%d replicas) while routing was not ready", n)
	}
	if n := e.deploymentReplicas("web"); n != replicas {
		t.Errorf("stable Deployment at %d, want %d", n, replicas)
	}
	if obs, _ := e.route(); obs.CanaryWeight != 0 || obs.HeaderRule >= 0 {
		t.Errorf("route changed while routing was not ready: %+v", obs)
	}
	e.createService(services.Canary, "canary")
	e.waitCondition(v1alpha1.ReasonTrafficReady)
	e.waitPhase(v1alpha1.CanaryPaused, 1)
	e.waitRoute(10, true)
}

func (e *env) waitCondition(reason string) {
	e.T.Helper()
	e.Eventually("TrafficRoutingReady reason "+reason, func() (bool, string) {
		c := meta.FindStatusCondition(e.canary().Status.Conditions, v1alpha1.ConditionTrafficRoutingReady)
		if c == nil {
			return false, "no condition"
		}
		want := metav1.ConditionFalse
		if reason == v1alpha1.ReasonTrafficReady {
			want = metav1.ConditionTrue
		}
		return c.Reason == reason && c.Status == want, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	})
}

// Someone sets the route's weights by hand during a step: the agent sees the edit and puts the
// step's weights back, through a patch that tests the route's new resourceVersion.
func TestRouteEditedDuringAStep(t *testing.T) {
	e := setup(t)
	e.pausedAtStep1()
	_, before := e.route()
	if _, err := e.gw.GatewayV1().HTTPRoutes(e.NS).Patch(e.Ctx, "web", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/rules/0/backendRefs/0/weight","value":70},{"op":"replace","path":"/spec/rules/0/backendRefs/1/weight","value":30}]`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRoute(10, true)
	_, after := e.route()
	if after.ResourceVersion == before.ResourceVersion {
		t.Error("the route was not written again")
	}
	e.waitEventReason(v1alpha1.EventTrafficShifted, 2)
}

// waitEventReason waits until the Canary has Events of reason counting at least n occurrences.
func (e *env) waitEventReason(reason string, n int32) {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("%d %s Events", n, reason), func() (bool, string) {
		list, err := e.Kube.CoreV1().Events(e.NS).List(e.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		var count int32
		for _, ev := range list.Items {
			if ev.InvolvedObject.Kind == "Canary" && ev.Type == corev1.EventTypeNormal {
				count += max(ev.Count, 1)
			}
		}
		return count >= n, fmt.Sprintf("%d", count)
	})
}
