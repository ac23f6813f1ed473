package canary

import (
	"context"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A canary Deployment the API server refuses to create (here: a ResourceQuota of one Deployment,
// held by the stable one) shows on the Canary as Degraded=True FailedCreate with the server's
// message, and phase Degraded, for as long as the refusal lasts; once the quota goes, the
// release begins and Degraded goes back to False.
func TestRefusedCreateShowsAsDegraded(t *testing.T) {
	e := setup(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "one-deployment"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"count/deployments.apps": resource.MustParse("1"),
		}},
	}
	if _, err := e.Kube.CoreV1().ResourceQuotas(e.NS).Create(e.Ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Until the quota controller has counted the stable Deployment, the quota's usage is unknown.
	err := wait.PollUntilContextTimeout(e.Ctx, 100*time.Millisecond, e2eenv.Safety, true, func(ctx context.Context) (bool, error) {
		q, err := e.Kube.CoreV1().ResourceQuotas(e.NS).Get(ctx, quota.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		used, ok := q.Status.Used["count/deployments.apps"]
		return ok && used.Value() == 1, nil
	})
	if err != nil {
		t.Fatalf("waiting for the quota to count the stable Deployment: %v", err)
	}

	e.createCanary(v1alpha1.PauseFirst, 1)
	refused := func(c *v1alpha1.Canary) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
		return c.Status.Phase == v1alpha1.CanaryDegraded && cond != nil && cond.Status == metav1.ConditionTrue &&
			cond.Reason == v1alpha1.ReasonFailedCreate && strings.Contains(cond.Message, "exceeded quota")
	}
	e.waitCanary("the refused create to show as Degraded FailedCreate", func(c *v1alpha1.Canary, _, canary *appsv1.Deployment) bool {
		if canary != nil {
			t.Fatalf("canary Deployment created despite the quota")
		}
		return refused(c)
	})
	// The agent retries with backoff; every retry is refused again, and the Canary never says
	// otherwise in between.
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		if c := e.canary(); !refused(c) {
			t.Fatalf("the Canary stopped showing the refusal while the quota holds:\n%s", describe(c))
		}
	}

	if err := e.Kube.CoreV1().ResourceQuotas(e.NS).Delete(e.Ctx, quota.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitCanary("the release to begin once the quota is gone", func(c *v1alpha1.Canary, _, canary *appsv1.Deployment) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
		return canary != nil && cond != nil && cond.Status == metav1.ConditionFalse && c.Status.Phase != v1alpha1.CanaryDegraded
	})
}
