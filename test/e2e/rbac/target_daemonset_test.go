package rbac

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

const targetAgents = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agents}
spec:
  selector: {matchLabels: {app: agents}}
  template:
    metadata: {labels: {app: agents}}
    spec:
      containers: [{name: agent, image: "nginx:1.26"}]
`

// canaryDaemonSetScenario: a Canary holds a DaemonSet (OnDelete, through its named watch),
// releases a new template (its revisions and pods listed, a pod deleted), is aborted (the stable
// ControllerRevision read and written back, the new pod deleted) and deleted (the DaemonSet read
// from the API server and its updateStrategy written back).
func (e *env) canaryDaemonSetScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-canary-daemonset")
	sets := e.kube.AppsV1().DaemonSets(ns)
	if _, err := sets.Create(e.ctx, decode[appsv1.DaemonSet](t, targetAgents), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var nodes int32
	wait := func(what string, cond func(*appsv1.DaemonSet) bool) {
		waitFor(t, e.ctx, "ds/agents "+what, func(ctx context.Context) (bool, string) {
			d, err := sets.Get(ctx, "agents", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			nodes = d.Status.DesiredNumberScheduled
			return d.Status.ObservedGeneration >= d.Generation && cond(d), fmt.Sprintf("%+v %+v", d.Spec.UpdateStrategy, d.Status)
		})
	}
	wait("available on every node", func(d *appsv1.DaemonSet) bool {
		return d.Status.DesiredNumberScheduled > 1 && d.Status.NumberAvailable == d.Status.DesiredNumberScheduled
	})
	cn := decode[v1alpha1.Canary](t, targetCanary)
	cn.Name, cn.Spec.Replicas, cn.Spec.TargetRef = "agents", nodes, &v1alpha1.CanaryTargetRef{Kind: "DaemonSet", Name: "agents"}
	if _, err := e.apps.AppsV1alpha1().Canaries(ns).Create(e.ctx, cn, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("held", func(d *appsv1.DaemonSet) bool {
		return d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
	})
	if _, err := sets.Patch(e.ctx, "agents", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Step 1, waiting for a promote: it stays there until the abort.
	wait("at step 1", func(d *appsv1.DaemonSet) bool {
		return d.Status.UpdatedNumberScheduled == 1 && d.Status.NumberAvailable == nodes
	})
	e.patch(t, workload.Canary, ns, "agents", types.MergePatchType, `{"spec":{"rollback":true}}`)
	e.waitEvent(t, ns, "agents", v1alpha1.EventTemplateRestored)
	wait("rolled back", func(d *appsv1.DaemonSet) bool {
		return d.Status.UpdatedNumberScheduled == nodes && d.Status.NumberAvailable == nodes && d.Spec.Template.Spec.Containers[0].Image == "nginx:1.26"
	})
	if err := e.apps.AppsV1alpha1().Canaries(ns).Delete(e.ctx, "agents", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("released by the finalizer", func(d *appsv1.DaemonSet) bool {
		return d.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType
	})
}
