package fault

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// Short leader election timings keep the test quick; the fencing argument is the same at any
// scale (docs/fencing.md): the fence lasts 5.1 s from the sending of a renewal, a standby waits
// at least 6 s from its observation of it.
var shortLease = []string{"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}

// The leader is frozen (SIGSTOP) mid-rollout for longer than its Lease, the standby takes over,
// and the old leader is continued (SIGCONT). The old leader must stop without a write once the
// new leader has written (the audit log tells them apart by User-Agent), the rollout completes
// under the new leader, and the budget holds throughout.
func TestLeaderFrozenPastLease(t *testing.T) {
	e := setup(t)
	const name, n, maxUnavailable = "frozen", 12, 2
	e.apply(tappManifest(name, n, maxUnavailable, 2, "registry.invalid/app:v1"))
	agents := []*agentproc.Agent{e.startAgent(shortLease...), e.startAgent(shortLease...)}
	old, oldID := e.leader(agents, "")
	e.waitRollout(workload.TApp, name, workload.StateComplete)
	w := invariant.TApp(e.Ctx, e.Kube, e.NS, name, n, maxUnavailable)

	e.patch(workload.TApp, name, `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.invalid/app:v2"}]}}}}`)
	e.waitUpdated(tappSelector(name), "registry.invalid/app:v2", 2)
	freeze(t, old, 9*time.Second) // past the 6 s Lease: the standby takes over meanwhile
	newer, newID := e.leader(agents, oldID)
	if newer == old {
		t.Fatal("the frozen agent still leads")
	}
	e.waitRollout(workload.TApp, name, workload.StateComplete)
	checkWatcher(t, "TApp", w)

	// The old leader, continued, finds its fence closed: it stops its controllers and exits.
	ctx, cancel := context.WithTimeout(e.Ctx, 30*time.Second)
	defer cancel()
	if code, err := old.Wait(ctx); err != nil || code == 0 {
		t.Errorf("the continued ex-leader: exit code %d, %v; want it to exit non-zero at once", code, err)
	}
	if !strings.Contains(old.Log(), "Write fence closed") {
		t.Error("the ex-leader's log does not say its write fence closed")
	}
	checkNoWriteAfter(t, oldID, newID)
}

// checkNoWriteAfter fails when the audit log has a write by oldID received after newID's first
// write.
func checkNoWriteAfter(t *testing.T, oldID, newID string) {
	t.Helper()
	late, writes, first := writesAfter(t, oldID, newID)
	if first.IsZero() {
		t.Fatal("the audit log has no accepted write by the new leader")
	}
	for _, ev := range late {
		t.Errorf("the old leader wrote after the new leader's first write (%s): %s", first.Format("15:04:05.000000"), ev)
	}
	if writes == 0 {
		t.Error("the audit log has no write by the old leader at all: the check proves nothing")
	}
	t.Logf("audit: %d writes by the old leader, %d after the new leader's first at %s", writes, len(late), first.Format("15:04:05.000000"))
}

// writesAfter returns the writes by oldID received at or after newID's first accepted write
// (first), and how many writes oldID made in all. Writes the API server refused do not count for
// newID: two agents starting together both try to create the Lease, and one is refused.
func writesAfter(t *testing.T, oldID, newID string) (late []auditEvent, writes int, first time.Time) {
	t.Helper()
	for _, ev := range audit(t, newID) {
		if isWrite(ev.Verb) && accepted(ev) && (first.IsZero() || ev.Received.Before(first)) {
			first = ev.Received
		}
	}
	for _, ev := range audit(t, oldID) {
		if !isWrite(ev.Verb) {
			continue
		}
		writes++
		if !first.IsZero() && !ev.Received.Before(first) {
			late = append(late, ev)
		}
	}
	return late, writes, first
}

func accepted(ev auditEvent) bool {
	return ev.ResponseStatus != nil && ev.ResponseStatus.Code < 400
}

// restartControlPlane stops kube-apiserver and etcd in place and starts them again.
func (e *env) restartControlPlane() {
	e.T.Helper()
	start := time.Now()
	if err := e.Cluster.RestartComponents(e.Ctx, 2*time.Second, localcluster.APIServer, localcluster.Etcd); err != nil {
		e.T.Fatal(err)
	}
	e.T.Logf("control plane restarted in %.1fs", time.Since(start).Seconds())
}

// kube-apiserver and etcd restart in the middle of a rollout of each kind: it completes, nothing
// is duplicated, the budget holds.
func TestAPIServerRestartMidRollout(t *testing.T) {
	t.Run("TApp", func(t *testing.T) {
		e := setup(t)
		const name, n, maxUnavailable = "restart", 12, 2
		e.apply(tappManifest(name, n, maxUnavailable, 2, "registry.invalid/app:v1"))
		e.startAgent("--leader-elect=false", "--controllers=tapp")
		e.waitRollout(workload.TApp, name, workload.StateComplete)
		w := invariant.TApp(e.Ctx, e.Kube, e.NS, name, n, maxUnavailable)
		e.patch(workload.TApp, name, `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.invalid/app:v2"}]}}}}`)
		e.waitUpdated(tappSelector(name), "registry.invalid/app:v2", 2)
		e.restartControlPlane()
		e.waitRollout(workload.TApp, name, workload.StateComplete)
		checkWatcher(t, "TApp", w)
		e.checkPods(tappSelector(name), n, "registry.invalid/app:v2")
	})
	t.Run("UnitedDeployment", func(t *testing.T) {
		e := setup(t)
		const name, n = "restart", 9
		e.apply(udManifest(name, n, "registry.invalid/app:v1"))
		e.startAgent("--leader-elect=false", "--controllers=uniteddeployment")
		e.waitRollout(workload.UnitedDeployment, name, workload.StateComplete)
		e.patch(workload.UnitedDeployment, name, `{"spec":{"template":{"deploymentTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.invalid/app:v2"}]}}}}}}}`)
		e.waitUpdated("app="+name, "registry.invalid/app:v2", 1)
		e.restartControlPlane()
		e.waitRollout(workload.UnitedDeployment, name, workload.StateComplete)
		e.checkPods("app="+name, n, "registry.invalid/app:v2")
		e.checkOneDeploymentPerSubset(name, 3)
	})
	t.Run("Canary", func(t *testing.T) {
		e := setup(t)
		const n = 10
		e.apply(stableManifest("web", n))
		e2eenv.WaitFor(e.T, e.Ctx, "the stable Deployment available", e.deploymentAvailable("web", n))
		w := invariant.Capacity(e.Ctx, e.Kube, e.NS, "web", "web-canary", n)
		sw := invariant.Surge(e.Ctx, e.Kube, e.NS, "app=web", n+3) // the default maxSurge: 25% of 10, rounded up
		e.startAgent("--leader-elect=false", "--controllers=canary")
		e.apply(canaryManifest("web", "web", "web-canary", n, 5))
		e.waitUpdated("track=canary", "registry.invalid/app:v2", 2)
		e.restartControlPlane()
		e.waitRollout(workload.Canary, "web", workload.StateComplete)
		checkWatcher(t, "Canary capacity", w)
		checkWatcher(t, "Canary surge", sw)
		e.checkPods("app=web", n, "registry.invalid/app:v2")
	})
}

// The agent's watches expire: mid-rollout, with the API server down, etcd's history is compacted
// to its current revision, so the restarted API server can no longer serve the agent's watches
// from where they were (410 Gone). The agent lists again (the audit log shows it) and completes
// the rollout without a duplicate create.
func TestWatchExpiredByCompaction(t *testing.T) {
	e := setup(t)
	const name, n, maxUnavailable = "compacted", 12, 2
	e.apply(tappManifest(name, n, maxUnavailable, 2, "registry.invalid/app:v1"))
	// Without leader election: with the API server down longer than a Lease, an elected agent
	// would rightly stop leading, which is not what this test is about.
	a := e.startAgent("--leader-elect=false", "--controllers=tapp")
	id := identity(t, a)
	e.waitRollout(workload.TApp, name, workload.StateComplete)
	w := invariant.TApp(e.Ctx, e.Kube, e.NS, name, n, maxUnavailable)
	e.patch(workload.TApp, name, `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.invalid/app:v2"}]}}}}`)
	e.waitUpdated(tappSelector(name), "registry.invalid/app:v2", 2)

	if err := e.Cluster.StopComponents(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	rev, err := e.Cluster.CompactEtcd(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Cluster.StartComponents(e.Ctx, localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd compacted at revision %d with the API server down", rev)
	e.waitRollout(workload.TApp, name, workload.StateComplete)
	checkWatcher(t, "TApp", w)
	e.checkPods(tappSelector(name), n, "registry.invalid/app:v2")

	relisted := map[string]bool{}
	for _, ev := range audit(t, id) {
		list := ev.Verb == "list" || (ev.Verb == "watch" && strings.Contains(ev.RequestURI, "sendInitialEvents=true"))
		if list && ev.Received.After(down) && ev.ObjectRef != nil {
			relisted[ev.ObjectRef.Resource] = true
		}
	}
	if !relisted["pods"] || !relisted["tapps"] {
		t.Errorf("after the compaction the agent relisted %v; want pods and tapps among them", relisted)
	}
}

// identity is the agent's identity, from its first log line.
func identity(t *testing.T, a *agentproc.Agent) string {
	t.Helper()
	var id string
	deadline := time.Now().Add(time.Minute)
	for id == "" && time.Now().Before(deadline) {
		if m := identityRE.FindStringSubmatch(a.Log()); m != nil {
			id = m[1]
		}
		time.Sleep(100 * time.Millisecond)
	}
	if id == "" {
		t.Fatal("the agent logged no identity")
	}
	return id
}

var identityRE = regexp.MustCompile(`"Starting workload-agent".* identity="([^"]+)"`)

// checkPods checks that exactly n live pods match sel, all running image, with distinct names.
func (e *env) checkPods(sel string, n int, image string) {
	e.T.Helper()
	e2eenv.WaitFor(e.T, e.Ctx, fmt.Sprintf("%d pods %s on %s, no other", n, sel, image), func(ctx context.Context) (bool, string, error) {
		list, err := e.Kube.CoreV1().Pods(e.NS).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err.Error(), nil
		}
		live, updated := 0, 0
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				live++
				if p.Spec.Containers[0].Image == image && e2eenv.PodReady(&p) {
					updated++
				}
			}
		}
		return live == n && updated == n, fmt.Sprintf("%d live, %d ready on %s", live, updated, image), nil
	})
}

// checkOneDeploymentPerSubset checks that the UnitedDeployment owns one Deployment per subset.
func (e *env) checkOneDeploymentPerSubset(name string, subsets int) {
	e.T.Helper()
	list, err := e.Kube.AppsV1().Deployments(e.NS).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	owned := 0
	for _, d := range list.Items {
		for _, ref := range d.OwnerReferences {
			if ref.Kind == "UnitedDeployment" && ref.Name == name {
				owned++
			}
		}
	}
	if owned != subsets {
		e.T.Errorf("the UnitedDeployment owns %d Deployments; want %d, one per subset", owned, subsets)
	}
}

func (e *env) deploymentAvailable(name string, n int32) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return available(d) >= n, fmt.Sprintf("%d available", available(d)), nil
	}
}

func available(d *appsv1.Deployment) int32 { return d.Status.AvailableReplicas }
