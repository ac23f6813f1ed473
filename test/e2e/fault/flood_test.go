package fault

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// An unrelated-object flood changes nothing (issue 15): with a TApp and a completed Canary
// steady, hundreds of Deployments, StatefulSets (with their ControllerRevisions) and pods
// the agent did not create and no Canary names appear in the agent's namespace. The agent
// writes nothing (the audit log), and the TApp and the Canary keep their versions.
func TestUnrelatedFloodChangesNothing(t *testing.T) {
	e := setup(t)
	e.apply(tappManifest("steady", 3, 1, 0, "registry.invalid/app:v1"))
	e.apply(stableManifest("web", 4))
	e2eenv.WaitFor(e.T, e.Ctx, "the stable Deployment available", e.deploymentAvailable("web", 4))
	e.apply(canaryManifest("web", "web", "web-canary", 4, 2))
	a := e.startAgent()
	_, id := e.leader([]*agentproc.Agent{a}, "")
	e.waitRollout(workload.TApp, "steady", workload.StateComplete)
	e.waitRollout(workload.Canary, "web", workload.StateComplete)
	time.Sleep(3 * time.Second) // let the last status writes land before counting
	before := agentWrites(t, id)
	tapp, canary := e.version(workload.TApp, "steady"), e.version(workload.Canary, "web")

	const n = 150
	for i := range n {
		name := fmt.Sprintf("flood-%d", i)
		labels := map[string]string{"app": name}
		tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/flood:v1"}}}}
		sel := &metav1.LabelSelector{MatchLabels: labels}
		e2eenv.Create(t, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: sel, Template: tmpl}})
		e2eenv.Create(t, e.Ctx, e.Kube.AppsV1().StatefulSets(e.NS), &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), Selector: sel, Template: tmpl}})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: tmpl.Spec}
		pod.Spec.NodeSelector = map[string]string{"example.com/nowhere": "true"} // stays Pending: cheap
		e2eenv.Create(t, e.Ctx, e.Kube.CoreV1().Pods(e.NS), pod)
	}
	e2eenv.WaitFor(t, e.Ctx, "the flood's ControllerRevisions", func(ctx context.Context) (bool, string, error) {
		crs, err := e.Kube.AppsV1().ControllerRevisions(e.NS).List(ctx, metav1.ListOptions{LabelSelector: "app"})
		if err != nil {
			return false, "", err
		}
		return len(crs.Items) >= n, fmt.Sprintf("%d ControllerRevisions", len(crs.Items)), nil
	})
	time.Sleep(5 * time.Second) // the agent's watches deliver what they would deliver

	if after := agentWrites(t, id); len(after) != len(before) {
		for _, w := range after[len(before):] {
			t.Errorf("the agent wrote during the flood: %s", w)
		}
	}
	if v := e.version(workload.TApp, "steady"); v != tapp {
		t.Errorf("the TApp changed during the flood: resourceVersion %s → %s", tapp, v)
	}
	if v := e.version(workload.Canary, "web"); v != canary {
		t.Errorf("the Canary changed during the flood: resourceVersion %s → %s", canary, v)
	}
}

// agentWrites is the writes in the audit log by the agent of identity.
func agentWrites(t *testing.T, id string) []auditEvent {
	t.Helper()
	var out []auditEvent
	for _, ev := range audit(t, id) {
		if isWrite(ev.Verb) && ev.ObjectRef != nil && ev.ObjectRef.Resource != "leases" && ev.ObjectRef.Resource != "events" {
			out = append(out, ev)
		}
	}
	return out
}

// version is the resourceVersion of one of the test's workloads.
func (e *env) version(k workload.Kind, name string) string {
	e.T.Helper()
	obj, err := e.Dyn.Resource(k.Resource).Namespace(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return obj.GetResourceVersion()
}
