package rbac

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

const targetArena = `
apiVersion: apps.workload.dev/v1alpha1
kind: TApp
metadata: {name: arena}
spec:
  replicas: 2
  selector: {matchLabels: {app: arena}}
  template:
    metadata: {labels: {app: arena}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: server, image: "nginx:1.26"}]
`

const targetArenaCanary = `
apiVersion: apps.workload.dev/v1alpha1
kind: Canary
metadata: {name: arena}
spec:
  replicas: 2
  targetRef: {kind: TApp, name: arena}
  steps:
  - {replicas: 1, pause: {}}
`

// canaryTargetTAppScenario: a Canary holds a TApp (partition merge patches), releases a new
// template, is aborted (the stable ControllerRevision read and the templates written back with a
// JSON patch) and deleted (its hold released).
func (e *env) canaryTargetTAppScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-canary-tapp")
	tapps := e.apps.AppsV1alpha1().TApps(ns)
	if _, err := tapps.Create(e.ctx, decode[v1alpha1.TApp](t, targetArena), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.TApp, ns, "arena", workload.StateComplete)
	canaries := e.apps.AppsV1alpha1().Canaries(ns)
	if _, err := canaries.Create(e.ctx, decode[v1alpha1.Canary](t, targetArenaCanary), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	partition := func(want int32) {
		waitFor(t, e.ctx, fmt.Sprintf("tapp/arena at partition %d", want), func(ctx context.Context) (bool, string) {
			a, err := tapps.Get(ctx, "arena", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			p := a.Spec.UpdateStrategy.Partition
			return p != nil && *p == want, fmt.Sprintf("partition %v", p)
		})
	}
	partition(2)
	e.patch(t, workload.TApp, ns, "arena", types.JSONPatchType, `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]`)
	partition(1) // step 1, waiting for a promote: it stays there until the abort
	e.patch(t, workload.Canary, ns, "arena", types.MergePatchType, `{"spec":{"rollback":true}}`)
	e.waitEvent(t, ns, "arena", v1alpha1.EventTemplateRestored)
	waitFor(t, e.ctx, "tapp/arena back on its stable revision", func(ctx context.Context) (bool, string) {
		a, err := tapps.Get(ctx, "arena", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := a.Status
		return st.ObservedGeneration == a.Generation && st.UpdateRevision == st.CurrentRevision, fmt.Sprintf("%+v", st)
	})
	if err := canaries.Delete(e.ctx, "arena", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	partition(0) // released by the finalizer once the rollback left nothing to release
}
