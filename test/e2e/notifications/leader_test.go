package notifications

import (
	"context"
	"fmt"
	"testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// The leader is killed between an event and its delivery (its receiver refused every attempt
// so far); the agent elected next delivers it, once, with the same notification id.
func TestNewLeaderDeliversOnce(t *testing.T) {
	e := e2eenv.Setup(t)
	rc := newReceiver(t)
	configure(e, rc)
	rc.setFail(func(request) bool { return true })
	args := []string{"--namespace=" + e.NS, "--controllers=canary,notifications", "--leader-elect-namespace=" + e.NS,
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s"}
	first := e.RunAgent(agentproc.Options{Kubeconfig: e.Cluster.Kubeconfig, Args: args})
	ctx, cancel := context.WithTimeout(e.Ctx, e2eenv.Safety)
	defer cancel()
	if err := first.WaitLeading(ctx); err != nil {
		t.Fatal(err)
	}
	second := e.RunAgent(agentproc.Options{Kubeconfig: e.Cluster.Kubeconfig, Args: args})

	release(e, "web", "nginx:1.27", 0, map[string]string{"on-paused.hook": ""}, nil,
		v1alpha1.CanaryStep{Replicas: intOrPercent(1), Pause: &v1alpha1.CanaryPause{}})
	e.Eventually("the leader's first attempt at on-paused", func() (bool, string) {
		return len(rc.requests()) > 0, fmt.Sprintf("%d requests", len(rc.requests()))
	})
	first.Kill()
	rc.setFail(func(request) bool { return false })
	if err := second.WaitLeading(ctx); err != nil {
		t.Fatal(err)
	}
	waitCanary(e, "web", "recording on-paused delivered by the new leader", func(cn *v1alpha1.Canary) bool {
		return sent(cn, notify.OnPaused, "hook")
	})

	reqs := rc.requests()
	accepted, ids := 0, map[string]bool{}
	for _, r := range reqs {
		ids[r.ID] = true
		if r.Accepted {
			accepted++
		}
	}
	if accepted != 1 || len(ids) != 1 {
		t.Errorf("%d requests, %d accepted, ids %v: want one accepted and one id for every attempt", len(reqs), accepted, ids)
	}
	checkNotificationErrors(t, second)
	checkNoSecret(e, rc, second)
}
