package canary

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// A Canary with targetRef kind DaemonSet (docs/canary-targets.md) holds the DaemonSet with
// updateStrategy OnDelete, so that `kubectl set image ds/agents` updates no pod, then releases
// the new revision through the steps by deleting old pods (the DaemonSet controller recreates
// them from the new template); a failing check writes the stable revision's template back and
// the agent deletes the pods of the aborted one. A pod watcher fails the test the moment fewer
// than nodes − maxUnavailable (1) pods are ready or a node runs two live pods of the DaemonSet.
// The DaemonSet runs a pod on each of the local control plane's nodes (docs/testing.md).

const dsName = "agents"

// dsEnv is a namespace with a DaemonSet ready on every node and an agent running the canary
// controller.
type dsEnv struct {
	*env
	nodes int32 // the pods the DaemonSet schedules
	ready atomic.Bool
}

func setupDaemonSet(t *testing.T, watchPods bool, maxUnavailable int32) *dsEnv {
	t.Helper()
	e := &dsEnv{env: &env{Env: e2eenv.Setup(t)}}
	labels := map[string]string{"app": dsName}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: dsName},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, "example.com/agent:v1"),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable))}},
		},
	}
	if _, err := e.Kube.AppsV1().DaemonSets(e.NS).Create(e.Ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitDaemonSet("a ready pod on every node", func(d *appsv1.DaemonSet) bool {
		e.nodes = d.Status.DesiredNumberScheduled
		return e.nodes > 2 && d.Status.NumberReady == e.nodes && d.Status.NumberAvailable == e.nodes
	})
	if watchPods {
		w := e.WatchPods("maxUnavailable", "app="+dsName, e.checkDaemonSet)
		e.ready.Store(true)
		t.Cleanup(func() { w.Verify(t) })
	}
	e.startAgent()
	return e
}

// checkDaemonSet fails the test the moment fewer than nodes − 1 pods are ready (the DaemonSet's
// maxUnavailable) or a node runs two pods that are not terminating (a duplicate instance).
func (e *dsEnv) checkDaemonSet(pods map[types.UID]*corev1.Pod) []string {
	if !e.ready.Load() {
		return nil
	}
	ready, perNode := int32(0), map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		perNode[p.Spec.NodeName]++
		if e2eenv.PodReady(p) {
			ready++
		}
	}
	var out []string
	if ready < e.nodes-1 {
		out = append(out, fmt.Sprintf("%d ready pods < nodes − maxUnavailable = %d", ready, e.nodes-1))
	}
	for n, c := range perNode {
		if c > 1 && n != "" {
			out = append(out, fmt.Sprintf("%d live pods on node %s", c, n))
		}
	}
	if out != nil {
		e.Cancel()
	}
	return out
}

func (e *dsEnv) daemonSet() *appsv1.DaemonSet {
	e.T.Helper()
	return e2eenv.Get(e.T, e.Ctx, e.Kube.AppsV1().DaemonSets(e.NS), dsName)
}

func (e *dsEnv) waitDaemonSet(what string, cond func(*appsv1.DaemonSet) bool) {
	e.T.Helper()
	e.Eventually("DaemonSet "+what, func() (bool, string) {
		d, err := e.Kube.AppsV1().DaemonSets(e.NS).Get(e.Ctx, dsName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ObservedGeneration >= d.Generation && cond(d),
			fmt.Sprintf("%+v strategy %+v annotations %v", d.Status, d.Spec.UpdateStrategy, d.Annotations)
	})
}

// dsHeld says the agent holds the DaemonSet with keep pods on the stable revision.
func dsHeld(d *appsv1.DaemonSet, keep int32) bool {
	return d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType &&
		d.Annotations["apps.workload.dev/daemonset-partition"] == fmt.Sprint(keep)
}

// setImage is kubectl set image ds/agents: the template's image, nothing else.
func (e *dsEnv) setImage(image string) {
	e.T.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"checkout","image":%q}]}}}}`, image)
	if _, err := e.Kube.AppsV1().DaemonSets(e.NS).Patch(e.Ctx, dsName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// images counts the DaemonSet's live pods by image.
func (e *dsEnv) images() map[string]int {
	e.T.Helper()
	pods, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: "app=" + dsName})
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

func (e *dsEnv) createDSCanary(canaryName string, checks []v1alpha1.AnalysisCheck, steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	e.createTargetedCanary(canaryName, "DaemonSet", dsName, e.nodes, checks, steps...)
}

func (e *dsEnv) waitPhase(phase v1alpha1.CanaryPhase, reason string) *v1alpha1.Canary {
	e.T.Helper()
	return e.waitProgressing(phase, reason)
}

// A release in 3 steps with a timed pause and a passing Job check completes; the next, whose
// check fails, is rolled back by itself to the stable revision; a retry releases it again.
func TestDaemonSetTargetReleases(t *testing.T) {
	e := setupDaemonSet(t, true, 1)
	e.createDSCanary(name, []v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-succeed")},
		step(intstr.FromInt32(1), pauseFor(10*time.Second)), // long enough to look at step 1 under load
		step(intstr.FromString("50%"), nil, "smoke"),
		step(intstr.FromString("100%"), nil))

	// Held before any change: OnDelete, every pod kept on the stable revision.
	c := e.waitPhase(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	e.waitDaemonSet("held", func(d *appsv1.DaemonSet) bool { return dsHeld(d, e.nodes) })
	v1 := c.Status.Target.StableRevision

	// Release 1: v2 passes.
	e.setImage("example.com/agent:v2")
	e.waitCanary("step 1 to bake with 1 pod on v2", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 1 && c.Status.Batches[0].State == v1alpha1.BatchBaking
	})
	if got := e.images(); got["example.com/agent:v2"] != 1 {
		t.Errorf("during step 1's pause: images %v, want 1 pod on v2", got)
	}
	c = e.waitCanary("release 1 to complete", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision != v1 && c.Status.Target.StableRevision == c.Status.Target.UpdateRevision
	})
	if got := e.images(); got["example.com/agent:v2"] != int(e.nodes) {
		t.Errorf("after release 1: images %v", got)
	}
	e.waitDaemonSet("held again after release 1", func(d *appsv1.DaemonSet) bool { return dsHeld(d, e.nodes) })
	e.WaitEvent(v1alpha1.EventAnalysisPassed)
	e.WaitEvent(v1alpha1.EventReleaseComplete)
	v2 := c.Status.Target.StableRevision

	// Release 2: the check now fails at step 2; the template of v2 is written back and the agent
	// deletes the pods of v3.
	e.patchSpec(`{"analysis":[` + mustJSON(t, jobCheck("example.com/smoke:job-fail")) + `]}`)
	e.setImage("example.com/agent:v3")
	c = e.waitCanary("release 2 to roll back by itself", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.Abort != nil
	})
	if a := c.Status.Abort; a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "smoke" || a.Step != 2 {
		t.Errorf("abort %+v, want AnalysisFailed of smoke at step 2", a)
	}
	if c.Status.Target.UpdateRevision != v2 {
		t.Errorf("after the rollback: update revision %s, want %s", c.Status.Target.UpdateRevision, v2)
	}
	if img := e.daemonSet().Spec.Template.Spec.Containers[0].Image; img != "example.com/agent:v2" {
		t.Errorf("after the rollback: template image %s", img)
	}
	if got := e.images(); got["example.com/agent:v2"] != int(e.nodes) {
		t.Errorf("after the rollback: images %v", got)
	}
	e.waitDaemonSet("held after the rollback", func(d *appsv1.DaemonSet) bool { return dsHeld(d, e.nodes) })
	e.WaitEvent(v1alpha1.EventTemplateRestored)

	// Retry with a passing check: v3 is written back and released from step 1.
	e.patchSpec(`{"analysis":[` + mustJSON(t, jobCheck("example.com/smoke:job-succeed")) + `],"retries":1}`)
	e.waitCanary("the retry to release v3", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Abort == nil && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.Target.StableRevision != v2
	})
	if got := e.images(); got["example.com/agent:v3"] != int(e.nodes) {
		t.Errorf("after the retry: images %v", got)
	}
}

// The agent killed in the middle of a release (SIGKILL, during step 1's pause) and started again
// finishes it from where the Canary's status and the DaemonSet's partition say it was.
func TestDaemonSetTargetAgentKilledMidRelease(t *testing.T) {
	e := setupDaemonSet(t, true, 1)
	e.createDSCanary(name, nil,
		step(intstr.FromInt32(1), pauseFor(15*time.Second)), // the kill comes within it
		step(intstr.FromInt32(2), pauseFor(time.Second)))
	e.waitPhase(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	e.setImage("example.com/agent:v2")
	e.waitCanary("step 1 to bake", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 1 && c.Status.Batches[0].State == v1alpha1.BatchBaking
	})
	e.agent.Kill()
	if d := e.daemonSet(); !dsHeld(d, e.nodes-1) {
		t.Fatalf("while the agent is down: strategy %+v annotations %v, want OnDelete keeping %d", d.Spec.UpdateStrategy, d.Annotations, e.nodes-1)
	}
	e.startAgent()
	e.waitCanary("the release to complete", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.CurrentBatch == 3
	})
	if got := e.images(); got["example.com/agent:v2"] != int(e.nodes) {
		t.Errorf("after the release: images %v", got)
	}
	e.waitDaemonSet("held again", func(d *appsv1.DaemonSet) bool { return dsHeld(d, e.nodes) })
}

// A second Canary of the same DaemonSet is refused with a condition and writes nothing; deleting
// the Canary between releases gives the DaemonSet its updateStrategy back; a DaemonSet deleted
// mid-release is reported.
func TestDaemonSetTargetRefusals(t *testing.T) {
	e := setupDaemonSet(t, false, 2)
	e.createDSCanary(name, nil, step(intstr.FromString("100%"), nil))
	e.waitPhase(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	e.createDSCanary("second", nil, step(intstr.FromString("100%"), nil))
	e.waitDegraded("second", v1alpha1.ReasonTargetHeld)
	e.deleteCanary("second")
	if d := e.daemonSet(); !dsHeld(d, e.nodes) {
		t.Errorf("deleting the refused Canary changed the hold: strategy %+v annotations %v", d.Spec.UpdateStrategy, d.Annotations)
	}
	e.deleteCanary(name)
	e.waitDaemonSet("released by the deleted Canary", func(d *appsv1.DaemonSet) bool {
		ru := d.Spec.UpdateStrategy.RollingUpdate
		return d.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && ru != nil &&
			ru.MaxUnavailable != nil && ru.MaxUnavailable.IntValue() == 2 && d.Annotations["apps.workload.dev/daemonset-partition"] == ""
	})

	// Held again, in the middle of a release (step 1 waits for a promote), the DaemonSet deleted.
	e.createDSCanary(name, nil, step(intstr.FromInt32(1), &v1alpha1.CanaryPause{}))
	e.waitPhase(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	e.setImage("example.com/agent:v2")
	e.waitCanary("step 1 to wait for a promote", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryPaused && c.Status.CurrentBatch == 1
	})
	if err := e.Kube.AppsV1().DaemonSets(e.NS).Delete(e.Ctx, dsName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitDegraded(name, v1alpha1.ReasonTargetNotFound)
}

func (e *dsEnv) deleteCanary(canaryName string) {
	e.T.Helper()
	if err := e.Apps.AppsV1alpha1().Canaries(e.NS).Delete(e.Ctx, canaryName, metav1.DeleteOptions{}); err != nil {
		e.T.Fatal(err)
	}
	e.Eventually("Canary "+canaryName+" gone", func() (bool, string) {
		_, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, canaryName, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
