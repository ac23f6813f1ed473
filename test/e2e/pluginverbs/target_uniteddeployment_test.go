package pluginverbs

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// A UnitedDeployment released zone by zone by a Canary, driven only by the plugin: set image on
// the UnitedDeployment starts the release, status of the Canary shows the step and of the
// UnitedDeployment names the Canary, set-partition on it is refused with the way through the
// Canary, get draws it under the Canary, promote completes the release.
func TestCanaryZonesThroughThePlugin(t *testing.T) {
	e := setup(t)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pay"}}
	ud := &v1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "pay"}}
	ud.Spec.Replicas = ptr.To[int32](2)
	ud.Spec.Selector = sel
	ud.Spec.Template.StatefulSetTemplate = &v1alpha1.StatefulSetTemplateSpec{Spec: appsv1.StatefulSetSpec{
		Selector: sel, ServiceName: "pay", PodManagementPolicy: appsv1.ParallelPodManagement,
		Template: podTemplate(sel.MatchLabels, "nginx:1.26"),
	}}
	for _, z := range []string{"zone-a", "zone-b"} {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, v1alpha1.Subset{Name: z, NodeSelectorTerm: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: localcluster.ZoneLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}},
		}})
	}
	if _, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Create(e.Ctx, ud, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startAgent("canary,uniteddeployment")
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "pay"}}
	c.Spec.Replicas = 2
	c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "UnitedDeployment", Name: "pay"}
	c.Spec.Steps = []v1alpha1.CanaryStep{{Subsets: []string{"zone-a"}, Pause: &v1alpha1.CanaryPause{}}}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("held", func() (bool, string) {
		r := e.plugin("status", "canary/pay")
		return r.Code == 0 && strings.Contains(r.Out, "ud/pay at revision") && strings.Contains(r.Out, "held at partition 2"), r.Out
	})

	e.ok("ud/pay image updated: main=nginx:1.27", "set", "image", "ud/pay", "main=nginx:1.27")
	e.Eventually("zone-a released, waiting for a promote", func() (bool, string) {
		r := e.plugin("status", "canary/pay")
		return strings.Contains(r.Out, "step 1 of 2") && strings.Contains(r.Out, "Paused") && strings.Contains(r.Out, "1/2 pods on revision"), r.Out
	})
	if r := e.plugin("status", "ud/pay"); !strings.Contains(r.Out, "canary/pay") {
		t.Errorf("status ud/pay does not name the Canary:\n%s", r.Out)
	}
	e.fails("released in place by canary/pay", workload.UnitedDeployment, "pay", "set-partition", "ud/pay", "zone-b=0")
	if r := e.ok("ud/pay", "get", "canary/pay"); !strings.Contains(r.Out, "target: ud/pay") {
		t.Errorf("get canary/pay does not draw its UnitedDeployment:\n%s", r.Out)
	}
	e.ok("canary/pay promoted", "promote", "canary/pay")
	e.Eventually("completed", func() (bool, string) {
		r := e.plugin("status", "canary/pay")
		return r.Code == 0 && strings.Contains(r.Out, "Completed") && strings.Contains(r.Out, "held at partition 2"), r.Out
	})
}
