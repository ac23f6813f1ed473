package pluginverbs

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// On native workloads, with kube-controller-manager writing the history: set image sends a
// strategic merge patch, history reads the StatefulSet's ControllerRevisions and the
// Deployment's ReplicaSets, undo restores the previous template, set-partition works on a
// RollingUpdate StatefulSet and is refused above its replicas.
func TestNativeWorkloads(t *testing.T) {
	e := setup(t)
	dbLabels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}}
	sts.Spec.Replicas = ptr.To[int32](2)
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: dbLabels}
	sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	sts.Spec.Template = podTemplate(dbLabels, "postgres:15")
	if _, err := e.Kube.AppsV1().StatefulSets(e.NS).Create(e.Ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stsSettled := func() (bool, string) {
		s, err := e.Kube.AppsV1().StatefulSets(e.NS).Get(e.Ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := s.Status
		return st.ObservedGeneration == s.Generation && st.UpdatedReplicas == 2 && st.ReadyReplicas == 2 && st.CurrentRevision == st.UpdateRevision,
			fmt.Sprintf("%+v", st)
	}
	e.Eventually("db ready", stsSettled)
	e.ok("sts/db image updated: main=postgres:16 (was postgres:15)", "set", "image", "sts/db", "main=postgres:16")
	e.Eventually("db updated", stsSettled)
	r := e.ok("main=postgres:16", "history", "sts/db")
	if lines := strings.Split(strings.TrimSpace(r.Out), "\n"); len(lines) != 3 || !strings.Contains(lines[2], "*") {
		t.Fatalf("history:\n%s", r.Out)
	}
	e.ok("sts/db partition set to 1 (was 0)", "set-partition", "sts/db", "1")
	e.fails("sts/db: partition 3 is above its replicas (2)", workload.StatefulSet, "db", "set-partition", "sts/db", "3")
	e.ok("sts/db rolled back to revision 1", "undo", "sts/db")
	if img := image(e.get(workload.StatefulSet, "db"), "spec", "template"); img != "postgres:15" {
		t.Fatalf("after undo the StatefulSet runs %s", img)
	}

	frontLabels := map[string]string{"app": "front"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "front"}}
	d.Spec.Replicas = ptr.To[int32](2)
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: frontLabels}
	d.Spec.Template = podTemplate(frontLabels, "nginx:1.26")
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	revision := func(want string) func() (bool, string) {
		return func() (bool, string) {
			got, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, "front", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			rev := got.Annotations["deployment.kubernetes.io/revision"]
			return rev == want && got.Status.ObservedGeneration == got.Generation && got.Status.UpdatedReplicas == 2,
				fmt.Sprintf("revision %s status %+v", rev, got.Status)
		}
	}
	e.Eventually("front at revision 1", revision("1"))
	e.ok("deploy/front image updated: main=nginx:1.27 (was nginx:1.26)", "set", "image", "deploy/front", "main=nginx:1.27")
	e.Eventually("front at revision 2", revision("2"))
	e.ok("deploy/front paused", "pause", "deploy/front")
	e.fails("deploy/front is paused: resume it", workload.Deployment, "front", "undo", "deploy/front")
	e.ok("deploy/front resumed", "resume", "deploy/front")
	e.ok("deploy/front rolled back to revision 1", "undo", "deploy/front")
	e.Eventually("front at revision 3 (the first template, renumbered)", revision("3"))
	if img := image(e.get(workload.Deployment, "front"), "spec", "template"); img != "nginx:1.26" {
		t.Fatalf("after undo the Deployment runs %s", img)
	}
	e.ok("deploy/front: skipped, revision 3 is the current template", "undo", "deploy/front", "--to-revision=3")
}
