package canary

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
)

// A Canary with targetRef {kind: TApp} releases a TApp in place (docs/canary-targets.md): it holds
// spec.updateStrategy.partition at replicas, so that a new template updates no instance, then
// lowers it step by step; the agent's TApp controller updates the instances with the highest ids
// (in place: only the image changes), within the TApp's maxUnavailable (1). A failing check
// writes the stable revision's templates back. An invariant watcher fails the test the moment
// more than maxUnavailable of the instances lack a ready pod, or an instance id has two pods.

const (
	tappName     = "games"
	tappReplicas = 4
)

// tappTargetEnv is a namespace with a TApp of 4 ready instances and an agent running the canary
// and TApp controllers.
type tappTargetEnv struct {
	*env
	watching atomic.Bool // the invariant applies once every instance was ready
}

// setupTAppTarget makes the TApp and starts the agent; with watchPods (a test in which pods
// change) the invariant watcher too.
func setupTAppTarget(t *testing.T, watchPods bool) *tappTargetEnv {
	t.Helper()
	e := &tappTargetEnv{env: &env{Env: e2eenv.Setup(t)}}
	labels := map[string]string{"app": tappName}
	tapp := &v1alpha1.TApp{
		ObjectMeta: metav1.ObjectMeta{Name: tappName},
		Spec: v1alpha1.TAppSpec{
			Replicas: ptr.To[int32](tappReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, "example.com/games:v1"),
		},
	}
	tapp.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	e2eenv.Create(t, e.Ctx, e.Apps.AppsV1alpha1().TApps(e.NS), tapp)
	e.startTAppAgent()
	e.waitTApp("4 ready instances", func(a *v1alpha1.TApp) bool {
		return a.Status.ReadyReplicas == tappReplicas && a.Status.AvailableReplicas == tappReplicas && a.Status.UpdatedReplicas == tappReplicas
	})
	if watchPods {
		w := e.WatchPods("invariant", v1alpha1.LabelTAppName+"="+tappName, e.checkTAppInvariant)
		e.watching.Store(true)
		t.Cleanup(func() { w.Verify(t) })
	}
	return e
}

// startTAppAgent starts an agent running the canary and the TApp controllers (the TApp's
// instances are the agent's to update).
func (e *tappTargetEnv) startTAppAgent() {
	e.T.Helper()
	e.agent = e.StartAgentLoggingErrors("canary,tapp")
}

// checkTAppInvariant fails the test the moment more than maxUnavailable (1) of the instances
// 0 … replicas-1 lack a ready, non-terminating pod, or two live pods carry one instance id.
func (e *tappTargetEnv) checkTAppInvariant(pods map[types.UID]*corev1.Pod) []string {
	if !e.watching.Load() {
		return nil
	}
	live, ready := map[int]int{}, map[int]bool{}
	var out []string
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		id, err := strconv.Atoi(p.Labels[v1alpha1.LabelInstanceID])
		if err != nil {
			out = append(out, fmt.Sprintf("pod %s has instance id %q", p.Name, p.Labels[v1alpha1.LabelInstanceID]))
			continue
		}
		live[id]++
		ready[id] = ready[id] || e2eenv.PodReady(p)
	}
	unavailable := 0
	for id := 0; id < tappReplicas; id++ {
		if !ready[id] {
			unavailable++
		}
		if live[id] > 1 {
			out = append(out, fmt.Sprintf("instance %d has %d live pods", id, live[id]))
		}
	}
	if unavailable > 1 {
		out = append(out, fmt.Sprintf("%d instances unavailable > maxUnavailable = 1", unavailable))
	}
	if out != nil {
		e.Cancel()
	}
	return out
}

func (e *tappTargetEnv) tapp() *v1alpha1.TApp {
	e.T.Helper()
	return e2eenv.Get(e.T, e.Ctx, e.Apps.AppsV1alpha1().TApps(e.NS), tappName)
}

func (e *tappTargetEnv) waitTApp(what string, cond func(*v1alpha1.TApp) bool) {
	e.T.Helper()
	e.Eventually("TApp "+what, func() (bool, string) {
		a, err := e.Apps.AppsV1alpha1().TApps(e.NS).Get(e.Ctx, tappName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return a.Status.ObservedGeneration >= a.Generation && cond(a), fmt.Sprintf("%+v partition %d", a.Status, tappPartitionOf(a))
	})
}

func tappPartitionOf(a *v1alpha1.TApp) int32 { return ptr.Deref(a.Spec.UpdateStrategy.Partition, 0) }

// setTAppImage is kubectl workload set image tapp/games: the template's image, nothing else.
func (e *tappTargetEnv) setTAppImage(image string) {
	e.T.Helper()
	patch := fmt.Appendf(nil, `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, image)
	if _, err := e.Apps.AppsV1alpha1().TApps(e.NS).Patch(e.Ctx, tappName, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// tappImages counts the TApp's live pods by image.
func (e *tappTargetEnv) tappImages() map[string]int {
	e.T.Helper()
	pods, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelTAppName + "=" + tappName})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out
}

func (e *tappTargetEnv) createTAppCanary(checks []v1alpha1.AnalysisCheck, steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	e.createTargetedCanary(name, "TApp", tappName, tappReplicas, checks, steps...)
}

// waitHolding waits for the Canary to hold the TApp between releases.
func (e *tappTargetEnv) waitHolding() *v1alpha1.Canary {
	e.T.Helper()
	return e.waitProgressing(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
}

// waitStep1Baking waits for step 1 to bake (its timed pause) with its instance updated.
func (e *tappTargetEnv) waitStep1Baking() {
	e.T.Helper()
	e.waitCanary("step 1 to bake with 1 instance on the new revision", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 1 && len(c.Status.Batches) > 0 && c.Status.Batches[0].State == v1alpha1.BatchBaking
	})
}

// A release in 3 steps with a timed pause and a passing Job check completes; the next, whose
// check fails at step 2, is rolled back by itself to the stable revision.
func TestTAppTargetReleases(t *testing.T) {
	e := setupTAppTarget(t, true)
	e.createTAppCanary([]v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-succeed")},
		step(intstr.FromInt32(1), pauseFor(10*time.Second)),
		step(intstr.FromString("50%"), nil, "smoke"),
		step(intstr.FromInt32(tappReplicas), nil))

	c := e.waitHolding()
	if a := e.tapp(); tappPartitionOf(a) != tappReplicas || c.Status.Target == nil || c.Status.Target.Partition != tappReplicas {
		t.Fatalf("held at partition %d (status %+v), want %d", tappPartitionOf(a), c.Status.Target, tappReplicas)
	}
	v1 := c.Status.Target.StableRevision

	// Release 1: v2 passes.
	e.setTAppImage("example.com/games:v2")
	e.waitStep1Baking()
	if got := e.tappImages(); got["example.com/games:v2"] != 1 {
		t.Errorf("during step 1's pause: images %v, want 1 instance on v2", got)
	}
	if a := e.tapp(); tappPartitionOf(a) != tappReplicas-1 || a.Status.CurrentRevision != v1 {
		t.Errorf("during step 1's pause: partition %d, current revision %s (want %d, %s)", tappPartitionOf(a), a.Status.CurrentRevision, tappReplicas-1, v1)
	}
	c = e.waitCanary("release 1 to complete", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision != v1 && c.Status.Target.StableRevision == c.Status.Target.UpdateRevision
	})
	if got := e.tappImages(); got["example.com/games:v2"] != tappReplicas {
		t.Errorf("after release 1: images %v", got)
	}
	e.waitTApp("held again after release 1", func(a *v1alpha1.TApp) bool { return tappPartitionOf(a) == tappReplicas })
	e.WaitEvent(v1alpha1.EventAnalysisPassed)
	e.WaitEvent(v1alpha1.EventReleaseComplete)
	v2 := c.Status.Target.StableRevision

	// Release 2: the check now fails at step 2; the templates of v2 are written back.
	e.patchSpec(`{"analysis":[` + mustJSON(t, jobCheck("example.com/smoke:job-fail")) + `]}`)
	e.setTAppImage("example.com/games:v3")
	c = e.waitCanary("release 2 to roll back by itself", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.Abort != nil
	})
	if a := c.Status.Abort; a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "smoke" || a.Step != 2 {
		t.Errorf("abort %+v, want AnalysisFailed of smoke at step 2", a)
	}
	a := e.tapp()
	if img := a.Spec.Template.Spec.Containers[0].Image; img != "example.com/games:v2" || a.Status.CurrentRevision != v2 || a.Status.UpdateRevision != v2 || tappPartitionOf(a) != tappReplicas {
		t.Errorf("after the rollback: template image %s, revisions %s/%s (want %s), partition %d", img, a.Status.CurrentRevision, a.Status.UpdateRevision, v2, tappPartitionOf(a))
	}
	if got := e.tappImages(); got["example.com/games:v2"] != tappReplicas {
		t.Errorf("after the rollback: images %v", got)
	}
	e.WaitEvent(v1alpha1.EventTemplateRestored)
}

// The agent killed in the middle of a release (SIGKILL, during step 1's pause) and started again
// finishes it from where the Canary's status says it was, every instance on the new revision.
func TestTAppTargetAgentKilledMidRelease(t *testing.T) {
	e := setupTAppTarget(t, true)
	e.createTAppCanary(nil,
		step(intstr.FromInt32(1), pauseFor(15*time.Second)), // the kill comes within it
		step(intstr.FromInt32(2), pauseFor(time.Second)))
	e.waitHolding()
	e.setTAppImage("example.com/games:v2")
	e.waitStep1Baking()
	e.agent.Kill()
	if p := tappPartitionOf(e.tapp()); p != tappReplicas-1 {
		t.Fatalf("partition %d while the agent is down, want %d (step 1)", p, tappReplicas-1)
	}
	e.startTAppAgent()
	e.waitCanary("the release to complete", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.CurrentBatch == 3
	})
	if got := e.tappImages(); got["example.com/games:v2"] != tappReplicas {
		t.Errorf("after the release: images %v", got)
	}
	e.waitTApp("held again", func(a *v1alpha1.TApp) bool { return tappPartitionOf(a) == tappReplicas })
}

// A second Canary of the same TApp is refused with a condition, as is a paused TApp (until it
// is resumed); deleting the Canary between releases lets the TApp go (partition 0).
func TestTAppTargetRefusals(t *testing.T) {
	e := setupTAppTarget(t, false)
	e.createTAppCanary(nil, step(intstr.FromInt32(tappReplicas), nil))
	e.waitHolding()

	second := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "second"},
		Spec: v1alpha1.CanarySpec{Replicas: tappReplicas, Batches: ptr.To[int32](1),
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: "TApp", Name: tappName}},
	}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitDegraded("second", v1alpha1.ReasonTargetHeld)

	e2eenv.Update(t, e.Ctx, e.Apps.AppsV1alpha1().TApps(e.NS), tappName, func(a *v1alpha1.TApp) { a.Spec.UpdateStrategy.Paused = true })
	e.waitDegraded(name, v1alpha1.ReasonTargetUnsupported)
	e2eenv.Update(t, e.Ctx, e.Apps.AppsV1alpha1().TApps(e.NS), tappName, func(a *v1alpha1.TApp) { a.Spec.UpdateStrategy.Paused = false })
	e.waitHolding()

	for _, n := range []string{"second", name} {
		if err := e.Apps.AppsV1alpha1().Canaries(e.NS).Delete(e.Ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitTApp("released by the deleted Canary", func(a *v1alpha1.TApp) bool { return tappPartitionOf(a) == 0 })
}

// A TApp target whose Canary leaves spec.replicas out, scaled through its scale subresource
// (`kubectl scale tapp/games --replicas=8`, as an autoscaler would) from 4 to 8 while step 1
// (25%) waits for promotion: the TApp makes instances 4 to 7 from spec.template before the
// partition moves to 6, the agent deletes the instances below it on spec.template, and the TApp
// controller makes them again from its current revision, so exactly instances 6 and 7 run the
// new template (the step's share of the current total, never more). The release then completes
// with the 8 instances on it, under the moving-total invariant (no more than the TApp's one
// unavailable instance below the total, no pod above it) and with no contest.
func TestTAppTargetScaledUpMidRelease(t *testing.T) {
	e := setupTAppTarget(t, false)
	w := invariant.ReleaseFollowing(e.Ctx, e.Kube, e.NS, v1alpha1.LabelTAppName+"="+tappName, tappReplicas, 0, 1)
	failOnViolation(e.Env, w)
	e.createTargetedCanary(name, "TApp", tappName, 0, nil,
		step(intstr.FromString("25%"), &v1alpha1.CanaryPause{}),
		step(intstr.FromString("100%"), nil))
	e.waitHolding()
	e.setTAppImage("example.com/games:v2")
	e.waitCanary("step 1 (1 of 4) to wait for promotion", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 1 && c.Status.Target != nil && c.Status.Target.Partition == 3
	})

	w.Expect(8)
	kubectl(t, e.Env, "scale", "tapp/"+tappName, "--replicas=8")
	e.waitTApp("step 1 of 8: partition 6, 8 ready instances, 2 on the new template", func(a *v1alpha1.TApp) bool {
		return tappPartitionOf(a) == 6 && a.Status.ReadyReplicas == 8 && a.Status.UpdatedReplicas == 2 && a.Status.Replicas == 8
	})
	if got, want := e.podImagesOf(v1alpha1.LabelTAppName+"="+tappName, tappName), ordinalImages(tappName, 8, 6, "example.com/games:v1", "example.com/games:v2"); got != want {
		t.Errorf("at step 1 of 8: pods %s, want %s", got, want)
	}
	c := e.waitCanary("step 1 of 8 to wait for promotion", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return waitingBatch(c) == 1 && c.Status.Replicas == 8 && c.Status.Target != nil && c.Status.Target.Partition == 6
	})
	if c.Status.CanaryReplicas != 2 || c.Status.StableReplicas != 6 {
		t.Errorf("step 1 of 8 with %d canary and %d stable pods, want 2 and 6", c.Status.CanaryReplicas, c.Status.StableReplicas)
	}
	w.Follow(8)
	e.promote(c)
	c = e.waitCanary("the release to complete with 8 instances", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.Replicas == 8
	})
	e.waitTApp("held at 8 with every instance on v2", func(a *v1alpha1.TApp) bool {
		return tappPartitionOf(a) == 8 && a.Status.UpdatedReplicas == 8 && a.Status.ReadyReplicas == 8
	})
	if got := e.tappImages(); got["example.com/games:v2"] != 8 || len(got) != 1 {
		t.Errorf("after the release: images %v, want 8 on v2", got)
	}
	if c.Spec.Replicas != 0 {
		t.Errorf("spec.replicas %d, want it left out", c.Spec.Replicas)
	}
	checkFollowed(e.Env, w)
}
