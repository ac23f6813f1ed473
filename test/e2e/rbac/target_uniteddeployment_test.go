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

const zonesPayments = `
apiVersion: apps.workload.dev/v1alpha1
kind: UnitedDeployment
metadata: {name: payments}
spec:
  replicas: 2
  selector: {matchLabels: {app: payments}}
  template:
    statefulSetTemplate:
      spec:
        selector: {matchLabels: {app: payments}}
        podManagementPolicy: Parallel
        template:
          metadata: {labels: {app: payments}}
          spec:
            containers: [{name: payments, image: "nginx:1.26"}]
  topology:
    subsets:
    - {name: zone-a, nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}]}}
    - {name: zone-b, nodeSelectorTerm: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-b]}]}}
`

const zonesCanary = `
apiVersion: apps.workload.dev/v1alpha1
kind: Canary
metadata: {name: payments}
spec:
  replicas: 2
  targetRef: {kind: UnitedDeployment, name: payments}
  steps:
  - {subsets: [zone-a], pause: {}}
`

// canaryZonesScenario: a Canary holds a UnitedDeployment (its partitions patched, read from the
// agent's UnitedDeployment informer), releases zone-a of a new template, is aborted (the
// UnitedDeployment's ControllerRevision read and its template written back) and deleted (the
// UnitedDeployment read from the API server and its partitions removed).
func (e *env) canaryZonesScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-canary-zones")
	uds := e.apps.AppsV1alpha1().UnitedDeployments(ns)
	if _, err := uds.Create(e.ctx, decode[v1alpha1.UnitedDeployment](t, zonesPayments), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.UnitedDeployment, ns, "payments", workload.StateComplete)
	if _, err := e.apps.AppsV1alpha1().Canaries(ns).Create(e.ctx, decode[v1alpha1.Canary](t, zonesCanary), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	partitions := func(what string, a, b int32, none bool) {
		waitFor(t, e.ctx, "ud/payments "+what, func(ctx context.Context) (bool, string) {
			ud, err := uds.Get(ctx, "payments", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			m := ud.Spec.UpdateStrategy.ManualUpdate
			if none {
				return m == nil || len(m.Partitions) == 0, fmt.Sprintf("%+v", m)
			}
			return m != nil && m.Partitions["zone-a"] == a && m.Partitions["zone-b"] == b, fmt.Sprintf("%+v", m)
		})
	}
	partitions("held", 1, 1, false)
	e.patch(t, workload.UnitedDeployment, ns, "payments", types.JSONPatchType,
		`[{"op":"replace","path":"/spec/template/statefulSetTemplate/spec/template/spec/containers/0/image","value":"nginx:1.27"}]`)
	partitions("at step 1 (zone-a released)", 0, 1, false) // waiting for a promote until the abort
	e.patch(t, workload.Canary, ns, "payments", types.MergePatchType, `{"spec":{"rollback":true}}`)
	e.waitEvent(t, ns, "payments", v1alpha1.EventTemplateRestored)
	if err := e.apps.AppsV1alpha1().Canaries(ns).Delete(e.ctx, "payments", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	partitions("released by the deleted Canary", 0, 0, true)
}
