package rbac

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

const targetShelf = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: shelf}
spec:
  replicas: 2
  selector: {matchLabels: {app: shelf}}
  template:
    metadata: {labels: {app: shelf}}
    spec:
      containers: [{name: shelf, image: "nginx:1.26"}]
`

const targetShelfCanary = `
apiVersion: apps.workload.dev/v1alpha1
kind: Canary
metadata: {name: shelf}
spec:
  replicas: 2
  maxSurge: 1
  targetRef: {kind: Deployment, name: shelf}
  steps:
  - {replicas: 1, pause: {}}
`

// canaryDeploymentTargetScenario: a Canary holds a Deployment (paused through its named
// watch), releases a new template on a temporary canary Deployment (create, scale), is
// promoted through the hand-over (resume, pause, scale, delete of the temporary one), and is
// deleted (the Deployment read from the API server and resumed).
func (e *env) canaryDeploymentTargetScenario(t *testing.T) {
	ns := e.namespace(t, "rbac-canary-deployment-target")
	deployments := e.kube.AppsV1().Deployments(ns)
	if _, err := deployments.Create(e.ctx, decode[appsv1.Deployment](t, targetShelf), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.Deployment, ns, "shelf", workload.StateComplete)
	if _, err := e.apps.AppsV1alpha1().Canaries(ns).Create(e.ctx, decode[v1alpha1.Canary](t, targetShelfCanary), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	paused := func(want bool) {
		waitFor(t, e.ctx, fmt.Sprintf("deploy/shelf paused=%t", want), func(ctx context.Context) (bool, string) {
			d, err := deployments.Get(ctx, "shelf", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return d.Spec.Paused == want, fmt.Sprintf("paused %t", d.Spec.Paused)
		})
	}
	paused(true)
	if _, err := deployments.Patch(e.ctx, "shelf", types.JSONPatchType,
		[]byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.Canary, ns, "shelf", workload.StatePaused) // step 1 waits for a promote
	e.patch(t, workload.Canary, ns, "shelf", types.MergePatchType, `{"spec":{"approvedBatch":2}}`)
	e.waitEvent(t, ns, "shelf", v1alpha1.EventCanaryDeleted)
	waitFor(t, e.ctx, "deploy/shelf-canary gone", func(ctx context.Context) (bool, string) {
		_, err := deployments.Get(ctx, "shelf-canary", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	e.waitRollout(t, workload.Canary, ns, "shelf", workload.StateComplete)
	if err := e.apps.AppsV1alpha1().Canaries(ns).Delete(e.ctx, "shelf", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	paused(false) // resumed by the finalizer: nothing was left to release
}
