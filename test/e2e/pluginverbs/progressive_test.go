package pluginverbs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// A release in steps through the plugin: status shows step N of M and the timed pause left, get
// fits 80 columns and -o wide shows the pause whole, promote ends the pause, get shows both Deployments' images and revisions; then a step that
// cannot become available rolls back by itself, status says why, retry is refused on a
// running release and starts the aborted one again from step 1 once the image is fixed.
func TestCanaryStepsStatusGetRetry(t *testing.T) {
	e := setup(t)
	labels := map[string]string{"app": "pay", "track": "stable"}
	stable := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pay"}}
	stable.Spec.Replicas = ptr.To[int32](4)
	stable.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	stable.Spec.Template = podTemplate(labels, "nginx:1.26")
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Create(e.Ctx, stable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startAgent("canary")
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "pay"}}
	c.Spec.Replicas = 4
	c.Spec.StableRef.Name = "pay"
	c.Spec.Canary.Name = "pay-v2"
	c.Spec.Canary.Template = podTemplate(map[string]string{"app": "pay", "track": "canary"}, "nginx:1.27")
	c.Spec.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: time.Hour}}}}
	c.Spec.ProgressDeadlineSeconds = ptr.To[int32](120)
	c.Spec.ProgressDeadlineAbort = true
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("step 1 baking", func() (bool, string) {
		r := e.plugin("status", "canary/pay")
		return strings.Contains(r.Out, "step 1 of 2") && strings.Contains(r.Out, "Baking") && strings.Contains(r.Out, "left (until"), r.Out
	})
	// On 80 columns the tree's lines are cut (the pause's row keeps its name and loses its
	// INFO to the cut); -o wide prints them whole.
	narrow := *e.run
	narrow.Env = []string{"COLUMNS=80"}
	tree := narrow.Run("get", "canary/pay")
	for _, l := range strings.Split(strings.TrimSuffix(tree.Out, "\n"), "\n") {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("get canary/pay on 80 columns: a line of %d: %s", n, l)
		}
	}
	if wide := narrow.Run("get", "canary/pay", "-o", "wide"); !strings.Contains(wide.Out, "── pause") || !strings.Contains(wide.Out, "left (until") {
		t.Errorf("get canary/pay -o wide does not show the pause whole:\n%s", wide.Out)
	}
	e.fails("canary/pay was not aborted", workload.Canary, "pay", "retry", "canary/pay")
	e.ok("canary/pay promoted: batch 1 of 2 approved", "promote", "canary/pay")
	e.Eventually("completed", func() (bool, string) {
		r := e.plugin("status", "canary/pay")
		return r.Code == 0 && strings.Contains(r.Out, "Completed"), r.Out
	})
	r := e.ok("pay-v2", "get", "canary/pay")
	for _, want := range []string{"stable, main=nginx:1.26, revision 1", "canary, main=nginx:1.27, revision 1"} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("get canary/pay does not show %q:\n%s", want, r.Out)
		}
	}

	// The next release cannot become available (no node has the label): it rolls back by
	// itself at the deadline.
	e.ok("canary/pay aborted", "abort", "canary/pay")
	e.Eventually("rolled back", func() (bool, string) {
		got := e.get(workload.Canary, "pay")
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		return phase == string(v1alpha1.CanaryRolledBack), phase
	})
	patch := `{"spec":{"progressDeadlineSeconds":5,"canary":{"template":{"spec":{"nodeSelector":{"example.com/nowhere":"true"}}}}}}`
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Patch(e.Ctx, "pay", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.ok("canary/pay retried (rolled back on request)", "retry", "canary/pay")
	e.Eventually("aborted by the deadline", func() (bool, string) {
		r := e.plugin("status", "canary/pay")
		return r.Code != 0 && strings.Contains(r.Out, "aborted at step 1 (ProgressDeadlineExceeded)") && strings.Contains(r.Out, "RolledBack"), r.Out
	})
	patch = `{"spec":{"progressDeadlineSeconds":120,"canary":{"template":{"spec":{"nodeSelector":null}}}}}`
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Patch(e.Ctx, "pay", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.ok("canary/pay retried (aborted at step 1: ProgressDeadlineExceeded)", "retry", "canary/pay")
	e.Eventually("step 1 baking again", func() (bool, string) {
		r := e.plugin("status", "canary/pay")
		return strings.Contains(r.Out, "Baking"), r.Out
	})
	e.ok("canary/pay fully promoted", "promote", "canary/pay", "--full")
	e.Eventually("completed after the retry", func() (bool, string) {
		got := e.get(workload.Canary, "pay")
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		retries, _, _ := unstructured.NestedInt64(got.Object, "spec", "retries")
		return phase == string(v1alpha1.CanaryCompleted) && retries == 2, fmt.Sprintf("%s, retries %d", phase, retries)
	})
}
