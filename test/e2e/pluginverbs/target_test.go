package pluginverbs

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// A StatefulSet released in place by a Canary (targetRef), driven only by the plugin: set image
// on the StatefulSet starts the release, status shows the step and the revisions on both the
// Canary and the StatefulSet, set-partition and set image through the Canary are refused with
// the way through it, promote completes the release, abort returns the pods and retry releases
// the aborted revision again.
func TestCanaryTargetThroughThePlugin(t *testing.T) {
	e := setup(t)
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}}
	sts.Spec.Replicas = ptr.To[int32](3)
	sts.Spec.ServiceName = "db"
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	sts.Spec.Template = podTemplate(labels, "nginx:1.26")
	if _, err := e.Kube.AppsV1().StatefulSets(e.NS).Create(e.Ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startAgent("canary")
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "db"}}
	c.Spec.Replicas = 3
	c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "StatefulSet", Name: "db"}
	c.Spec.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{}}}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("held", func() (bool, string) {
		r := e.plugin("status", "canary/db")
		return r.Code == 0 && strings.Contains(r.Out, "held at partition 3"), r.Out
	})

	e.ok("sts/db image updated: main=nginx:1.27", "set", "image", "sts/db", "main=nginx:1.27")
	e.Eventually("step 1 waiting for promotion", func() (bool, string) {
		r := e.plugin("status", "canary/db")
		return strings.Contains(r.Out, "step 1 of 2") && strings.Contains(r.Out, "Paused") && strings.Contains(r.Out, "1/3 pods on revision"), r.Out
	})
	if r := e.plugin("status", "sts/db"); !strings.Contains(r.Out, "canary/db") {
		t.Errorf("status sts/db does not name the Canary:\n%s", r.Out)
	}
	e.fails("released in place by canary/db", workload.StatefulSet, "db", "set-partition", "sts/db", "0")
	e.fails("set image sts/db", workload.Canary, "db", "set", "image", "canary/db", "main=nginx:1.28")
	r := e.ok("sts/db", "get", "canary/db")
	if !strings.Contains(r.Out, "target: sts/db") {
		t.Errorf("get canary/db does not draw its StatefulSet:\n%s", r.Out)
	}
	e.ok("canary/db promoted", "promote", "canary/db")
	e.Eventually("completed", func() (bool, string) {
		r := e.plugin("status", "canary/db")
		return r.Code == 0 && strings.Contains(r.Out, "Completed") && strings.Contains(r.Out, "held at partition 3"), r.Out
	})

	// The next release is aborted at step 1 and retried.
	e.ok("sts/db image updated", "set", "image", "sts/db", "main=nginx:1.28")
	e.Eventually("step 1 of the next release", func() (bool, string) {
		r := e.plugin("status", "canary/db")
		return strings.Contains(r.Out, "Paused") && strings.Contains(r.Out, "1/3 pods on revision"), r.Out
	})
	e.ok("canary/db aborted: writing the stable revision's template back to sts/db", "abort", "canary/db")
	e.Eventually("rolled back", func() (bool, string) {
		got := e.get(workload.StatefulSet, "db")
		return image(got, "spec", "template") == "nginx:1.27" && phaseOf(e.get(workload.Canary, "db")) == string(v1alpha1.CanaryRolledBack),
			fmt.Sprintf("image %s, phase %s", image(got, "spec", "template"), phaseOf(e.get(workload.Canary, "db")))
	})
	e.ok("canary/db retried", "retry", "canary/db")
	e.Eventually("step 1 of the retried release", func() (bool, string) {
		got := e.get(workload.StatefulSet, "db")
		r := e.plugin("status", "canary/db")
		return image(got, "spec", "template") == "nginx:1.28" && strings.Contains(r.Out, "Paused"), r.Out
	})
	e.ok("canary/db fully promoted", "promote", "canary/db", "--full")
	e.Eventually("completed after the retry", func() (bool, string) {
		r := e.plugin("status", "canary/db")
		return r.Code == 0 && strings.Contains(r.Out, "Completed") && strings.Contains(r.Out, "held at partition 3"), r.Out
	})
}

func phaseOf(obj *unstructured.Unstructured) string {
	p, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	return p
}
