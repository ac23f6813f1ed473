package traffic

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/traffic"
)

// peerManager is the field manager of the simulated other controller.
const peerManager = "argo-rollouts"

// rulesWriter is the field manager that last wrote a route's spec.rules (an atomic list: one
// manager owns it whole).
func rulesWriter(r *gatewayv1.HTTPRoute) string {
	for _, f := range r.ManagedFields {
		if f.Subresource == "" && f.FieldsV1 != nil && strings.Contains(string(f.FieldsV1.Raw), `"f:rules"`) {
			return f.Manager
		}
	}
	return ""
}

// peer is another controller that owns the route's weights as it sees them: at every version
// of the route whose weights are not stable 100 / canary 0 it sets them back, under its own
// field manager, as Argo Rollouts' Gateway API plugin does for a route its Rollout names. It
// counts the route versions the agent wrote meanwhile.
type peer struct {
	mu          sync.Mutex
	agentWrites int
	peerWrites  int
	cancel      context.CancelFunc
	done        chan struct{}
}

// startPeer runs a peer until stop. This is a simulated writer, not the real Argo Rollouts
// controller: a cold build of github.com/argoproj/argo-rollouts/cmd/rollouts-controller@v1.10.2
// needs Go 1.26.10 and took 25 minutes here, far over the five a test tool may add
// (docs/testing.md, "Argo Rollouts"), and that controller sets HTTPRoute weights only through
// its Gateway API plugin, a separate binary it downloads at start. This writer does to the
// route what that plugin does, under its own field manager.
func (e *env) startPeer(gw gatewayclient.Interface) *peer {
	e.T.Helper()
	ctx, cancel := context.WithCancel(e.Ctx)
	p := &peer{cancel: cancel, done: make(chan struct{})}
	w, err := gw.GatewayV1().HTTPRoutes(e.NS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web"})
	if err != nil {
		e.T.Fatal(err)
	}
	go func() {
		defer close(p.done)
		defer w.Stop()
		for {
			var ev watch.Event
			select {
			case <-ctx.Done():
				return
			case got, ok := <-w.ResultChan():
				if !ok {
					return
				}
				ev = got
			}
			r, ok := ev.Object.(*gatewayv1.HTTPRoute)
			if !ok {
				continue
			}
			if ev.Type == watch.Added { // the route as it was when the watch started
				continue
			}
			if rulesWriter(r) == v1alpha1.FieldManagerAgent {
				p.mu.Lock()
				p.agentWrites++
				p.mu.Unlock()
			}
			obs, err := traffic.Observe(r, services)
			if err != nil || obs.CanaryWeight == 0 {
				continue
			}
			_, err = gw.GatewayV1().HTTPRoutes(e.NS).Patch(ctx, "web", types.JSONPatchType,
				[]byte(`[{"op":"replace","path":"/spec/rules/0/backendRefs/0/weight","value":100},{"op":"replace","path":"/spec/rules/0/backendRefs/1/weight","value":0}]`),
				metav1.PatchOptions{FieldManager: peerManager})
			if err == nil {
				p.mu.Lock()
				p.peerWrites++
				p.mu.Unlock()
			}
		}
	}()
	e.T.Cleanup(p.stop)
	return p
}

func (p *peer) stop() { p.cancel(); <-p.done }

func (p *peer) counts() (agent, peer int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.agentWrites, p.peerWrites
}

// Another controller keeps setting a Canary's route back to its own weights: the agent writes
// the route at most twice against it (docs/traffic.md, "Another controller on the route"; its
// third change back stops the agent), then stops and the Canary is Degraded, naming the other field manager. Nothing of
// the release moves while it is (a promote is not carried out). Once the other controller is
// gone and a person changes the weights by hand, the agent resumes and the release goes on.
func TestAnotherControllerOnTheRoute(t *testing.T) {
	e := setup(t)
	e.pausedAtStep1()

	p := e.startPeer(e.gw)
	// Start the contest: the route as the other controller wants it (the agent puts 10% back).
	if _, err := e.gw.GatewayV1().HTTPRoutes(e.NS).Patch(e.Ctx, "web", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/rules/0/backendRefs/0/weight","value":100},{"op":"replace","path":"/spec/rules/0/backendRefs/1/weight","value":0}]`),
		metav1.PatchOptions{FieldManager: peerManager}); err != nil {
		t.Fatal(err)
	}
	e.waitDegraded(v1alpha1.ReasonHTTPRouteContested, `field manager "`+peerManager+`"`)
	if c := meta.FindStatusCondition(e.canary().Status.Conditions, v1alpha1.ConditionTrafficRoutingReady); c == nil || c.Reason != v1alpha1.ReasonHTTPRouteContested {
		t.Errorf("TrafficRoutingReady %+v, want reason %s", c, v1alpha1.ReasonHTTPRouteContested)
	}

	// A promote while contested: the agent syncs (observedGeneration) and writes nothing.
	e.promote(1)
	e.Eventually("the promote observed, the Canary still Degraded", func() (bool, string) {
		c := e.canary()
		return c.Status.ObservedGeneration == c.Generation && c.Status.Phase == v1alpha1.CanaryDegraded,
			fmt.Sprintf("generation %d observed %d, %s: %s", c.Generation, c.Status.ObservedGeneration, c.Status.Phase, c.Status.Message)
	})
	p.stop()
	agent, peerN := p.counts()
	t.Logf("route writes during the contest: agent %d, other controller %d", agent, peerN)
	if agent > 2 {
		t.Errorf("the agent wrote the route %d times against the other controller, want at most 2", agent)
	}
	if obs, _ := e.route(); obs.CanaryWeight != 0 {
		t.Errorf("the route gives the canary %d%% after the contest, want the other controller's 0%%", obs.CanaryWeight)
	}
	if n := e.deploymentReplicas("web-canary"); n != 1 {
		t.Errorf("canary Deployment at %d replicas while the route is contested, want step 1's 1", n)
	}

	// The other controller is gone; a person sets weights by hand: the agent resumes.
	if _, err := e.gw.GatewayV1().HTTPRoutes(e.NS).Patch(e.Ctx, "web", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/rules/0/backendRefs/0/weight","value":90},{"op":"replace","path":"/spec/rules/0/backendRefs/1/weight","value":10}]`),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	e.waitPhase(v1alpha1.CanaryPaused, 2)
	e.waitRoute(50, false)
}

// waitDegraded waits until the Canary is Degraded with the reason and a message containing
// what.
func (e *env) waitDegraded(reason, what string) {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("Canary Degraded (%s) naming %s", reason, what), func() (bool, string) {
		c := e.canary()
		d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
		if d == nil {
			return false, string(c.Status.Phase)
		}
		return c.Status.Phase == v1alpha1.CanaryDegraded && d.Reason == reason && strings.Contains(d.Message, what),
			fmt.Sprintf("%s; Degraded %s %s: %s", c.Status.Phase, d.Status, d.Reason, d.Message)
	})
}
