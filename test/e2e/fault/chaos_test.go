//go:build chaos

package fault

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
)

var rounds = flag.Int("rounds", 10, "rounds of the chaos scenario")

// TestChaos is what `make chaos` runs: two agents under leader election (Lease 15 s, the
// defaults) while a TApp of 30 (maxUnavailable 3) and a Canary of 20 release; the leader frozen
// with SIGSTOP for 20 s then continued, then the leader killed three times (a new agent started
// each time, so that two always run). Repeated -rounds times, each round in a namespace of its
// own, printing its violations: broken TApp budget or duplicate instance, Canary capacity under
// 20, a write by the frozen leader after its successor's first, a rollout that did not complete.
func TestChaos(t *testing.T) {
	total := 0
	var summary []string
	for r := 1; r <= *rounds; r++ {
		var v violations
		t.Run(fmt.Sprintf("round-%02d", r), func(t *testing.T) { v = chaosRound(t) })
		total += v.sum()
		line := fmt.Sprintf("chaos round %d/%d: %d violations (%s)", r, *rounds, v.sum(), v)
		summary = append(summary, line)
		fmt.Println(line)
	}
	fmt.Printf("chaos: %d rounds, %d violations in all\n%s\n", *rounds, total, strings.Join(summary, "\n"))
	if total > 0 {
		t.Errorf("%d violations in %d rounds", total, *rounds)
	}
}

type violations struct{ tapp, canary, fenced, incomplete int }

func (v violations) sum() int { return v.tapp + v.canary + v.fenced + v.incomplete }
func (v violations) String() string {
	return fmt.Sprintf("TApp budget/duplicates %d, Canary capacity or surge %d, writes by a fenced leader %d, rollouts not completed %d",
		v.tapp, v.canary, v.fenced, v.incomplete)
}

func chaosRound(t *testing.T) (v violations) {
	e := setup(t)
	const tappN, maxUnavailable, canaryN = 30, 3, 20
	e.apply(tappManifest("chaos", tappN, maxUnavailable, 3, "registry.invalid/app:v1"))
	e.apply(stableManifest("web", canaryN))
	agents := []*agentproc.Agent{e.startAgent(), e.startAgent()}
	leader, leaderID := e.leader(agents, "")
	e.waitRollout(workload.TApp, "chaos", workload.StateComplete)
	e2eenv.WaitFor(e.T, e.Ctx, "the stable Deployment available", e.deploymentAvailable("web", canaryN))
	tw := invariant.TApp(e.Ctx, e.Kube, e.NS, "chaos", tappN, maxUnavailable)
	cw := invariant.Capacity(e.Ctx, e.Kube, e.NS, "web", "web-canary", canaryN)
	sw := invariant.Surge(e.Ctx, e.Kube, e.NS, "app=web", canaryN+canaryN/4) // the default maxSurge, 25%

	e.patch(workload.TApp, "chaos", `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.invalid/app:v2"}]}}}}`)
	e.apply(canaryManifest("web", "web", "web-canary", canaryN, 10))
	e.waitUpdated(tappSelector("chaos"), "registry.invalid/app:v2", 3)

	freeze(t, leader, 20*time.Second)
	frozenID := leaderID
	leader, leaderID = e.leader(agents, frozenID)
	successorID := leaderID
	agents = e.replaceExited(agents)

	for range 3 {
		leader.Kill()
		agents = e.replaceExited(agents)
		leader, leaderID = e.leader(agents, leaderID)
	}
	_ = leader
	for _, k := range []struct {
		kind workload.Kind
		name string
	}{{workload.TApp, "chaos"}, {workload.Canary, "web"}} {
		if !e.completes(k.kind, k.name) {
			v.incomplete++
		}
	}
	late, _, first := writesAfter(t, frozenID, successorID)
	v.fenced = len(late)
	for _, ev := range late {
		t.Logf("the frozen leader wrote after its successor's first write (%s): %s", first.Format("15:04:05.000000"), ev)
	}
	tw.Stop()
	cw.Stop()
	sw.Stop()
	v.tapp, v.canary = tw.Count(), cw.Count()+sw.Count()
	for _, s := range append(append(tw.Violations(), cw.Violations()...), sw.Violations()...) {
		t.Log(s)
	}
	t.Logf("TApp worst: %s; Canary worst: %s; most Canary pods: %s", tw.Worst(), cw.Worst(), sw.Worst())
	return v
}

// replaceExited starts a new agent for each one that exited, so that two keep running.
func (e *env) replaceExited(agents []*agentproc.Agent) []*agentproc.Agent {
	time.Sleep(time.Second) // let a continued or killed agent exit
	out := agents[:0:0]
	for _, a := range agents {
		if a.Running() {
			out = append(out, a)
		} else {
			out = append(out, e.startAgent())
		}
	}
	return out
}

// completes waits for the rollout to complete and reports whether it did.
func (e *env) completes(k workload.Kind, name string) bool {
	ctx, cancel := context.WithTimeout(e.Ctx, 5*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		if st, _, err := e.rollout(ctx, k, name); err == nil && st.State == workload.StateComplete {
			return true
		}
		time.Sleep(time.Second)
	}
	e.T.Logf("%s/%s did not complete", k.Short, name)
	return false
}
