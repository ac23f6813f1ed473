package pluginverbs

import (
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// A DaemonSet (one pod on each node of the local control plane) driven by the plugin alone, with
// kube-controller-manager rolling it: set image, status -w to the end, history, get, undo
// (dry run first) back to the first template; the verbs without meaning for a DaemonSet refuse
// it; then a Canary holds it and status names the Canary and its step, set image says the
// Canary releases it, and promote --full completes that release. Every wait is for a settled
// state: a complete rollout or a step paused for promote.
func TestDaemonSetThroughThePlugin(t *testing.T) {
	e := setup(t)
	labels := map[string]string{"app": "agents"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agents"}}
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	ds.Spec.Template = podTemplate(labels, "fluentd:1.16")
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromString("100%"))}}
	if _, err := e.Kube.AppsV1().DaemonSets(e.NS).Create(e.Ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.ok("Complete", "status", "ds/agents", "-w", "--timeout=40s")

	e.ok("ds/agents image updated: main=fluentd:1.17 (was fluentd:1.16)", "set", "image", "ds/agents", "main=fluentd:1.17")
	e.ok("Complete", "status", "ds/agents", "-w", "--timeout=40s")
	r := e.ok("fluentd:1.17", "history", "ds/agents")
	if !strings.Contains(r.Out, "main=fluentd:1.16") || !regexp.MustCompile(`(?m)^2\s+\*\s+agents-`).MatchString(r.Out) {
		t.Errorf("history ds/agents does not list revision 1 and revision 2 as current:\n%s", r.Out)
	}
	r = e.ok("ds/agents", "get", "ds/agents")
	if !strings.Contains(r.Out, "update revision, ") || !strings.Contains(r.Out, "pod/agents-") {
		t.Errorf("get ds/agents does not draw its pods under the update revision:\n%s", r.Out)
	}

	before := e.get(workload.DaemonSet, "agents")
	e.ok("ds/agents rolled back to revision 1", "undo", "ds/agents", "--dry-run=client")
	e.ok("ds/agents rolled back to revision 1", "undo", "ds/agents", "--dry-run=server")
	if after := e.get(workload.DaemonSet, "agents"); after.GetGeneration() != before.GetGeneration() {
		t.Fatalf("a dry-run undo changed ds/agents (generation %d → %d)", before.GetGeneration(), after.GetGeneration())
	}
	e.ok("ds/agents rolled back to revision 1", "undo", "ds/agents")
	e.ok("Complete", "status", "ds/agents", "-w", "--timeout=40s")
	if got := image(e.get(workload.DaemonSet, "agents"), "spec", "template"); got != "fluentd:1.16" {
		t.Fatalf("after undo ds/agents runs %s, want fluentd:1.16", got)
	}

	for _, args := range [][]string{{"pause", "ds/agents"}, {"promote", "ds/agents"}, {"abort", "ds/agents"},
		{"set-partition", "ds/agents", "0"}, {"kill-instance", "ds/agents", "0"}} {
		e.fails("this command does not work on a DaemonSet", workload.DaemonSet, "agents", args...)
	}

	// A Canary holds it: the next template is released through its steps.
	e.startAgent("canary")
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "agents"}}
	// The steps count the DaemonSet's pods: one per node.
	c.Spec.Replicas = e2eenv.Get(t, e.Ctx, e.Kube.AppsV1().DaemonSets(e.NS), "agents").Status.DesiredNumberScheduled
	c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "DaemonSet", Name: "agents"}
	c.Spec.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{}}}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("held", func() (bool, string) {
		r := e.plugin("status", "canary/agents")
		return r.Code == 0 && strings.Contains(r.Out, "held with updateStrategy OnDelete"), r.Out
	})
	e.ok("canary/agents releases it through its steps", "set", "image", "ds/agents", "main=fluentd:1.18")
	e.Eventually("step 1 waiting for promotion", func() (bool, string) {
		r := e.plugin("status", "ds/agents")
		return strings.Contains(r.Out, "Paused at step 1 of 2") && strings.Contains(r.Out, "held by a Canary"), r.Out
	})
	r = e.plugin("status", "ds/agents")
	if !strings.Contains(r.Out, "the target DaemonSet of canary/agents") {
		t.Errorf("status ds/agents does not name the Canary:\n%s", r.Out)
	}
	e.ok("canary/agents fully promoted", "promote", "canary/agents", "--full")
	e.ok("Completed", "status", "canary/agents", "-w", "--timeout=40s")
}
