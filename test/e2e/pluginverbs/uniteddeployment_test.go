package pluginverbs

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// A UnitedDeployment of StatefulSet subsets in three zones is released zone by zone: partitions
// hold zone-b and zone-c while zone-a updates, promote --subset releases zone-b, promote --all
// the rest; history shows both revisions and undo goes back.
func TestUnitedDeploymentZoneByZone(t *testing.T) {
	e := setup(t)
	e.startAgent("tapp,uniteddeployment")
	labels := map[string]string{"app": "orders"}
	ud := &v1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "orders"}}
	ud.Spec.Replicas = ptr.To[int32](6)
	ud.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	ud.Spec.Template.StatefulSetTemplate = &v1alpha1.StatefulSetTemplateSpec{Spec: appsv1.StatefulSetSpec{
		Selector:            &metav1.LabelSelector{MatchLabels: labels},
		PodManagementPolicy: appsv1.ParallelPodManagement,
		Template:            podTemplate(labels, "nginx:1.27"),
	}}
	for _, zone := range []string{"zone-a", "zone-b", "zone-c"} {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, v1alpha1.Subset{Name: zone, NodeSelectorTerm: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: localcluster.ZoneLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
		}})
	}
	if _, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Create(e.Ctx, ud, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// updated waits until every subset has the given number of ready pods on the updated
	// revision (and 2 ready pods in all).
	updated := func(want map[string]int32) func() (bool, string) {
		return func() (bool, string) {
			got, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Get(e.Ctx, "orders", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s := got.Status
			ok := s.ObservedGeneration == got.Generation && len(s.SubsetStatuses) == 3 && s.ReadyReplicas == 6
			for _, ss := range s.SubsetStatuses {
				ok = ok && ss.Replicas == 2 && ss.ReadyReplicas == 2 && ss.UpdatedReplicas == want[ss.Name]
			}
			return ok, fmt.Sprintf("observed %d/%d ready %d subsets %+v", s.ObservedGeneration, got.Generation, s.ReadyReplicas, s.SubsetStatuses)
		}
	}
	e.Eventually("2 ready pods in each zone", updated(map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 2}))

	e.ok("ud/orders partitions set: zone-b=2 (was 0), zone-c=2 (was 0)", "set-partition", "ud/orders", "zone-b=2", "zone-c=2")
	e.fails("ud/orders: partition 3 for subset zone-a is above its replicas (2)", workload.UnitedDeployment, "orders", "set-partition", "ud/orders", "zone-a=3")
	e.fails(`ud/orders has no subset "zone-d": its subsets are zone-a, zone-b, zone-c`, workload.UnitedDeployment, "orders", "promote", "ud/orders", "--subset", "zone-d")

	e.ok("ud/orders image updated: main=nginx:1.28 (was nginx:1.27)", "set", "image", "ud/orders", "main=nginx:1.28")
	e.Eventually("zone-a updated, zone-b and zone-c held", updated(map[string]int32{"zone-a": 2, "zone-b": 0, "zone-c": 0}))
	// A pipeline's manual gate: status -w --success-on-pause succeeds on the rollout held by the
	// partitions, naming them; a one-shot status says paused is not done (exit 3).
	e.ok("ud/orders Paused: held by partitions zone-b=2, zone-c=2", "status", "-w", "ud/orders", "--success-on-pause", "--timeout=2m")
	if r := e.plugin("status", "ud/orders"); r.Code != 3 || !strings.Contains(r.Out, "zone-a  2/2 ready  2/2 updated\n") ||
		!strings.Contains(r.Out, "zone-b  2/2 ready  0/2 updated  partition 2\n") {
		t.Fatalf("status of a rollout held by partitions: exit %d, want 3 and a line per subset", r.Code)
	}
	e.ok("ud/orders promoted: partition 0 on zone-b", "promote", "ud/orders", "--subset", "zone-b")
	e.Eventually("zone-b updated, zone-c held", updated(map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 0}))
	e.ok("ud/orders promoted: partition 0 on zone-c", "promote", "ud/orders", "--all")
	e.Eventually("every zone updated", updated(map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 2}))
	e.ok("ud/orders: subsets zone-a, zone-b, zone-c are already at partition 0", "promote", "ud/orders", "--all")

	r := e.ok("main=nginx:1.28", "history", "ud/orders")
	if lines := strings.Split(strings.TrimSpace(r.Out), "\n"); len(lines) != 3 || !strings.Contains(lines[1], "main=nginx:1.27") || !strings.Contains(lines[2], "*") {
		t.Fatalf("history:\n%s", r.Out)
	}
	e.ok("ud/orders rolled back to revision 1", "undo", "ud/orders")
	if img := image(e.get(workload.UnitedDeployment, "orders"), "spec", "template", "statefulSetTemplate", "spec", "template"); img != "nginx:1.27" {
		t.Fatalf("after undo the template runs %s", img)
	}
	e.Eventually("every zone back on the first template", updated(map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 2}))
	r = e.ok("*", "history", "ud/orders")
	if lines := strings.Split(strings.TrimSpace(r.Out), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "main=nginx:1.27") || !strings.Contains(lines[2], "*") {
		t.Fatalf("after undo the first revision should be the newest and current:\n%s", r.Out)
	}
}
