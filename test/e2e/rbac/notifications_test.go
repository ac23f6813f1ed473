package rbac

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentrbac "github.com/kubectl-workload/kubectl-workload/config/agent"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// canaryNotificationsScenario: a release paused at batch 1 whose on-paused subscription (on the
// namespace) meets a receiver that refuses once, then accepts: the agent reads the namespace,
// the ConfigMap and Secret of its namespace, applies the NotificationsDelivered condition
// (False, then True) and records the delivery on the Canary.
func (e *env) canaryNotificationsScenario(t *testing.T) {
	var mu sync.Mutex
	refused := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !refused {
			refused = true
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	cms, secrets := e.kube.CoreV1().ConfigMaps(agentrbac.Namespace), e.kube.CoreV1().Secrets(agentrbac.Namespace)
	if _, err := secrets.Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: notify.SecretName},
		StringData: map[string]string{"hook-url": srv.URL + "/hook"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: notify.ConfigMapName},
		Data: map[string]string{"service.webhook.hook": "url: $hook-url"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cms.Delete(context.Background(), notify.ConfigMapName, metav1.DeleteOptions{})
		_ = secrets.Delete(context.Background(), notify.SecretName, metav1.DeleteOptions{})
	}()

	ns := e.namespace(t, "rbac-notifications")
	if _, err := e.kube.CoreV1().Namespaces().Patch(e.ctx, ns, "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+notify.SubscribePrefix+`on-paused.hook":""}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.AppsV1().Deployments(ns).Create(e.ctx, decode[appsv1.Deployment](t, canaryStable), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitRollout(t, workload.Deployment, ns, "checkout", workload.StateComplete)
	canaries := e.apps.AppsV1alpha1().Canaries(ns)
	if _, err := canaries.Create(e.ctx, decode[v1alpha1.Canary](t, canaryCheckout), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitEvent(t, ns, "checkout", notify.EventFailed)
	waitFor(t, e.ctx, "on-paused delivered after a refusal, under the condition", func(ctx context.Context) (bool, string) {
		c, err := canaries.Get(ctx, "checkout", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, notify.ConditionDelivered)
		sent, _ := notify.ParseSent(c.Annotations[notify.AnnotationSent])
		return cond != nil && cond.Status == metav1.ConditionTrue && len(sent[notify.OnPaused].To) == 1, c.Annotations[notify.AnnotationSent]
	})
}
