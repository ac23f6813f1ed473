package pluginverbs

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// kill-instance and start-instance stop and start TApp instances by id; set-partition, set
// image and undo change its template; refused commands change nothing.
func TestTAppVerbs(t *testing.T) {
	e := setup(t)
	e.startAgent("tapp")
	labels := map[string]string{"app": "web"}
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	tapp.Spec.Replicas = ptr.To[int32](4)
	tapp.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	tapp.Spec.Template = podTemplate(labels, "nginx:1.27")
	if _, err := e.Apps.AppsV1alpha1().TApps(e.NS).Create(e.Ctx, tapp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := func(n int32) func() (bool, string) {
		return func() (bool, string) {
			got, err := e.Apps.AppsV1alpha1().TApps(e.NS).Get(e.Ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s := got.Status
			return s.ObservedGeneration == got.Generation && s.ReadyReplicas == n && s.UpdatedReplicas == n,
				fmt.Sprintf("generation %d observed %d ready %d updated %d statuses %v", got.Generation, s.ObservedGeneration, s.ReadyReplicas, s.UpdatedReplicas, s.Statuses)
		}
	}
	podGone := func(name string) func() (bool, string) {
		return func() (bool, string) {
			_, err := e.Kube.CoreV1().Pods(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprintf("get %s: %v", name, err)
		}
	}
	e.Eventually("4 ready instances", ready(4))

	e.ok("tapp/web instances 1, 3 killed", "kill-instance", "tapp/web", "3", "1")
	e.Eventually("pod web-1 deleted", podGone("web-1"))
	e.Eventually("pod web-3 deleted", podGone("web-3"))
	e.Eventually("2 ready instances", ready(2))
	// get shows the killed instances without a pod, and how to start them.
	tree := e.ok("tapp/web", "get", "tapp/web")
	for _, id := range []string{"1", "3"} {
		if !regexp.MustCompile(`(?m)^[├└]── #` + id + ` \(no pod\) +Killed +killed \(kubectl workload start-instance to start it\)$`).MatchString(tree.Out) {
			t.Fatalf("get does not show instance %s killed:\n%s", id, tree.Out)
		}
	}
	e.ok("tapp/web: instance 3 is already killed", "kill-instance", "tapp", "web", "3")
	e.fails("tapp/web: instance id 4 is out of range: ids are 0 to 3 (replicas 4)", workload.TApp, "web", "kill-instance", "tapp/web", "0", "4")
	e.fails(`tapp/web: "-1" is not an instance id`, workload.TApp, "web", "kill-instance", "tapp/web", "--", "-1")

	e.ok("tapp/web instance 1 started", "start-instance", "tapp/web", "1")
	e.Eventually("3 ready instances", ready(3))
	if s := e.get(workload.TApp, "web").Object["spec"].(map[string]interface{})["statuses"]; !equalJSON(s, map[string]string{"3": "Killed"}) {
		t.Fatalf("spec.statuses %v, want only 3 killed", s)
	}
	e.ok("tapp/web instance 3 started", "start-instance", "tapp/web", "3")
	e.Eventually("4 ready instances", ready(4))

	// A server-side dry run is validated by the API server and changes nothing.
	before := e.get(workload.TApp, "web")
	e.ok("(server dry run)", "set", "image", "tapp/web", "main=nginx:1.28", "--dry-run=server")
	if after := e.get(workload.TApp, "web"); after.GetGeneration() != before.GetGeneration() {
		t.Fatal("a server dry run changed the TApp")
	}

	e.ok("tapp/web partition set to 2 (was 0)", "set-partition", "tapp/web", "2")
	e.fails("tapp/web: partition 5 is above its replicas (4)", workload.TApp, "web", "set-partition", "tapp/web", "5")
	e.ok("tapp/web image updated: main=nginx:1.28 (was nginx:1.27)", "set", "image", "tapp/web", "main=nginx:1.28")
	updatedFrom := func(id int, want string) func() (bool, string) {
		return func() (bool, string) {
			pod, err := e.Kube.CoreV1().Pods(e.NS).Get(e.Ctx, fmt.Sprintf("web-%d", id), metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return pod.Spec.Containers[0].Image == want, pod.Spec.Containers[0].Image
		}
	}
	// Instances 2 and 3 move to the new image; the partition holds 0 and 1.
	e.Eventually("web-3 on nginx:1.28", updatedFrom(3, "nginx:1.28"))
	e.Eventually("web-2 on nginx:1.28", updatedFrom(2, "nginx:1.28"))
	if ok, img := updatedFrom(0, "nginx:1.27")(); !ok {
		t.Fatalf("web-0 runs %s although the partition holds it", img)
	}
	// The controller records every template as a ControllerRevision; the current one is marked.
	r := e.ok("CURRENT", "history", "tapp/web")
	if !strings.Contains(r.Out, "main=nginx:1.27") || !regexp.MustCompile(`(?m)^2 +\* .*main=nginx:1\.28`).MatchString(r.Out) {
		t.Fatalf("history lacks a revision or does not mark nginx:1.28 current:\n%s", r.Out)
	}
	e.ok("tapp/web rolled back to revision 1", "undo", "tapp/web")
	if img := image(e.get(workload.TApp, "web"), "spec", "template"); img != "nginx:1.27" {
		t.Fatalf("after undo the template runs %s", img)
	}
	e.Eventually("web-3 back on nginx:1.27", updatedFrom(3, "nginx:1.27"))
	// A second undo goes forward again.
	e.ok("tapp/web rolled back to revision", "undo", "tapp/web")
	if img := image(e.get(workload.TApp, "web"), "spec", "template"); img != "nginx:1.28" {
		t.Fatalf("after a second undo the template runs %s", img)
	}
}
