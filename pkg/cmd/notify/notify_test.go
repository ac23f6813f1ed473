package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/config"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
)

// objects is a Canary paused at step 1 of 2 in a namespace subscribing on-paused to the webhook
// "hook" (url in the Secret) and Slack, the ConfigMap and the Secret, and a TApp.
func objects(hookURL string, subscribe bool) []runtime.Object {
	t0 := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	cn := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: cmdtest.Namespace, UID: "uid-1"}}
	cn.Spec.Canary.Template.Spec.Containers = []corev1.Container{{Name: "checkout", Image: "registry.example/checkout:1.4"}}
	cn.Status.Phase, cn.Status.CurrentBatch, cn.Status.Message = v1alpha1.CanaryPaused, 1, "batch 1/2 complete: waiting for promotion"
	cn.Status.Batches = []v1alpha1.CanaryBatchStatus{{Index: 1, State: v1alpha1.BatchPaused, StartTime: &t0}, {Index: 2, State: v1alpha1.BatchPending}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cmdtest.Namespace}}
	if subscribe {
		ns.Annotations = map[string]string{notify.SubscribePrefix + "on-paused.hook": "", notify.SubscribePrefix + "on-paused.slack": ""}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: notify.ConfigMapName, Namespace: config.AgentNamespace},
		Data: map[string]string{"service.webhook.hook": "url: $hook-url", "service.slack": "webhookURL: $slack-url"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: notify.SecretName, Namespace: config.AgentNamespace},
		Data: map[string][]byte{"hook-url": []byte(hookURL + "/hook/s3cret"), "slack-url": []byte(hookURL + "/slack/s3cret")}}
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: cmdtest.Namespace}}
	return []runtime.Object{cn, ns, cm, secret, tapp}
}

// receiver records the paths and bodies it gets and answers status.
func receiver(t *testing.T, status int) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+r.Header.Get(notify.HeaderID)+" "+body["text"].(string))
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

func TestNotifyTest(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		subscribe bool
		args      []string
		sends     int
	}{
		{"test-paused", http.StatusOK, true, []string{"canary/checkout", "--trigger", "paused"}, 2},
		{"test-dry-run-client", http.StatusOK, true, []string{"canary/checkout", "--trigger", "on-paused", "--dry-run=client"}, 0},
		{"error-receiver-fails", http.StatusInternalServerError, true, []string{"canary/checkout", "--trigger", "paused"}, 2},
		{"error-not-subscribed", http.StatusOK, false, []string{"canary/checkout", "--trigger", "paused"}, 0},
		{"error-no-trigger", http.StatusOK, true, []string{"canary/checkout"}, 0},
		{"error-unknown-trigger", http.StatusOK, true, []string{"canary/checkout", "--trigger", "on-sync-succeeded"}, 0},
		{"error-tapp", http.StatusOK, true, []string{"tapp/web", "--trigger", "paused"}, 0},
		{"error-no-configmap", http.StatusOK, true, []string{"canary/checkout", "--trigger", "paused", "--agent-namespace", "elsewhere"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := receiver(t, tt.status)
			res := cmdtest.Run(t, NewCmdTest, objects(srv.URL, tt.subscribe), tt.args...)
			transcript := res.Transcript()
			cmdtest.Golden(t, tt.name, transcript)
			if strings.Contains(transcript, "s3cret") || strings.Contains(transcript, "127.0.0.1") {
				t.Errorf("the transcript shows a secret:\n%s", transcript)
			}
			sent := got()
			if len(sent) != tt.sends {
				t.Fatalf("%d requests, want %d: %v", len(sent), tt.sends, sent)
			}
			for _, s := range sent {
				if !strings.Contains(s, " test-uid-1 ") || !strings.Contains(s, "canary/checkout: paused at step 1 of 2") {
					t.Errorf("request %q: want the notification id and the paused message", s)
				}
			}
			cmdtest.AssertUnchanged(t, res, objects(srv.URL, tt.subscribe))
		})
	}
}
