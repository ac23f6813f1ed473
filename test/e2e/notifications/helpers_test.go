package notifications

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// request is one request the receiver accepted or refused.
type request struct {
	Service, ID string
	Accepted    bool
	Body        map[string]any
}

// Trigger is the trigger a webhook request announces (its default body names it).
func (r request) Trigger() string { s, _ := r.Body["trigger"].(string); return s }

// receiver plays the three services: /hook/ the webhook, /slack/ a Slack incoming webhook,
// /teams/ a Teams Workflows webhook. It refuses the first requests while failing says so.
type receiver struct {
	srv *httptest.Server

	mu   sync.Mutex
	got  []request
	fail func(r request) bool
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{fail: func(request) bool { return false }}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := request{Service: strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0], ID: r.Header.Get(notify.HeaderID)}
		if err := json.Unmarshal(b, &req.Body); err != nil {
			t.Errorf("%s: a body that is not JSON: %q", r.URL.Path, b)
		}
		rc.mu.Lock()
		req.Accepted = !rc.fail(req)
		rc.got = append(rc.got, req)
		rc.mu.Unlock()
		if !req.Accepted {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// setFail replaces what the receiver refuses.
func (rc *receiver) setFail(fail func(r request) bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.fail = fail
}

// requests returns what the receiver got, in order.
func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// accepted counts the webhook's accepted requests by trigger, and fails the test on a
// notification id accepted twice.
func (rc *receiver) accepted(t *testing.T) map[string]int {
	t.Helper()
	byTrigger, ids := map[string]int{}, map[string]bool{}
	for _, r := range rc.requests() {
		if !r.Accepted {
			continue
		}
		if ids[r.Service+r.ID] {
			t.Errorf("%s accepted notification %s twice (%s)", r.Service, r.ID, r.Trigger())
		}
		ids[r.Service+r.ID] = true
		if r.Service == "hook" {
			byTrigger[r.Trigger()]++
		}
	}
	return byTrigger
}

// configure creates the ConfigMap and the Secret in the agent's namespace (the test's): the
// three services, their URLs in the Secret.
func configure(e *e2eenv.Env, rc *receiver) {
	e.T.Helper()
	e2eenv.Create(e.T, e.Ctx, e.Kube.CoreV1().ConfigMaps(e.NS), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: notify.ConfigMapName},
		Data: map[string]string{
			"service.webhook.hook": "url: $hook-url\nheaders:\n- name: Authorization\n  value: Bearer $hook-token",
			"service.slack":        "webhookURL: $slack-url",
			"service.teams":        "recipientUrls:\n  releases: $teams-url",
		},
	})
	e2eenv.Create(e.T, e.Ctx, e.Kube.CoreV1().Secrets(e.NS), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: notify.SecretName},
		StringData: map[string]string{
			"hook-url":   rc.srv.URL + "/hook/s3cret",
			"hook-token": "s3cret-token",
			"slack-url":  rc.srv.URL + "/slack/T000/B000/s3cret",
			"teams-url":  rc.srv.URL + "/teams/workflows/s3cret",
		},
	})
}

// subscribe annotates the test's namespace with subscriptions (per-namespace defaults).
func subscribe(e *e2eenv.Env, subs ...string) {
	e.T.Helper()
	e2eenv.Update(e.T, e.Ctx, e.Kube.CoreV1().Namespaces(), e.NS, func(ns *corev1.Namespace) {
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		for _, s := range subs {
			k, v, _ := strings.Cut(s, "=")
			ns.Annotations[notify.SubscribePrefix+k] = v
		}
	})
}

const replicas = 3

// release creates a stable Deployment and a Canary name releasing it through steps, with the
// Canary's own subscriptions and a progress deadline (0: the default).
func release(e *e2eenv.Env, name, image string, deadline int32, subs map[string]string, checks []v1alpha1.AnalysisCheck, steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	labels := func(track string) map[string]string { return map[string]string{"app": name, "track": track} }
	template := func(track, image string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(track)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
	}
	e2eenv.Create(e.T, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](replicas), Selector: &metav1.LabelSelector{MatchLabels: labels("stable")},
			Template: template("stable", "nginx:1.26")},
	})
	annotations := map[string]string{}
	for k, v := range subs {
		annotations[notify.SubscribePrefix+k] = v
	}
	cn := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: v1alpha1.CanarySpec{
			Replicas: replicas, StableRef: v1alpha1.StableRef{Name: name},
			Canary: v1alpha1.CanaryTarget{Name: name + "-canary", Template: template("canary", image)},
			Steps:  steps, Analysis: checks,
		},
	}
	if deadline > 0 {
		cn.Spec.ProgressDeadlineSeconds = &deadline
	}
	e2eenv.Create(e.T, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), cn)
}

// jobCheck is an analysis check running a Job of image: kwok finishes "job-fail" pods with exit
// code 1 and "job-succeed" ones with 0 (test/localcluster/stages.yaml).
func jobCheck(image string) v1alpha1.AnalysisCheck {
	return v1alpha1.AnalysisCheck{Name: "smoke", Count: ptr.To[int32](1), Provider: v1alpha1.AnalysisProvider{Job: &v1alpha1.JobProvider{
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "smoke", Image: image}}},
		}}},
	}}}
}

// canary reads the Canary.
func canary(e *e2eenv.Env, name string) *v1alpha1.Canary {
	return e2eenv.Get(e.T, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), name)
}

// waitCanary waits until cond holds on the Canary.
func waitCanary(e *e2eenv.Env, name, what string, cond func(cn *v1alpha1.Canary) bool) *v1alpha1.Canary {
	e.T.Helper()
	var last *v1alpha1.Canary
	e.Eventually(fmt.Sprintf("canary/%s %s", name, what), func() (bool, string) {
		cn, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		last = cn
		return cond(cn), fmt.Sprintf("phase %s step %d: %s; sent %s", cn.Status.Phase, cn.Status.CurrentBatch, cn.Status.Message, cn.Annotations[notify.AnnotationSent])
	})
	return last
}

// sent reports whether the Canary's record shows the trigger delivered to every one of to.
func sent(cn *v1alpha1.Canary, trigger string, to ...string) bool {
	s, err := notify.ParseSent(cn.Annotations[notify.AnnotationSent])
	if err != nil {
		return false
	}
	for _, d := range to {
		if !slices.Contains(s[trigger].To, d) {
			return false
		}
	}
	return true
}

// waitAccepted waits until the webhook accepted want notifications of each trigger.
func waitAccepted(e *e2eenv.Env, rc *receiver, want map[string]int) {
	e.T.Helper()
	e.Eventually(fmt.Sprintf("the webhook to accept %v", want), func() (bool, string) {
		got := map[string]int{}
		for _, r := range rc.requests() {
			if r.Accepted && r.Service == "hook" {
				got[r.Trigger()]++
			}
		}
		for k, n := range want {
			if got[k] < n {
				return false, fmt.Sprintf("accepted %v", got)
			}
		}
		return true, ""
	})
}

func intOrPercent(n int) intstr.IntOrString { return intstr.FromInt32(int32(n)) }

// startAgent runs the canary and notifications controllers scoped to the test's namespace,
// which is the agent's namespace too (the ConfigMap and Secret are there). The test fails on
// an error the notifications controller logged; the canary controller's are only logged, as
// its own tests do.
func startAgent(e *e2eenv.Env) *agentproc.Agent {
	e.T.Helper()
	a := e.StartAgentLoggingErrors("canary,notifications", "--leader-elect-namespace="+e.NS)
	e.T.Cleanup(func() { checkNotificationErrors(e.T, a) })
	return a
}

// checkNoSecret fails the test when the agent's log or the namespace's Events show a value of
// the Secret (every one holds "s3cret") or the receiver's address.
func checkNoSecret(e *e2eenv.Env, rc *receiver, a *agentproc.Agent) {
	e.T.Helper()
	host := strings.TrimPrefix(rc.srv.URL, "http://")
	if a != nil && (strings.Contains(a.Log(), "s3cret") || strings.Contains(a.Log(), host)) {
		e.T.Errorf("the agent's log shows a secret or the receiver's address")
	}
	events, err := e.Kube.CoreV1().Events(e.NS).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	for _, ev := range events.Items {
		if strings.Contains(ev.Message, "s3cret") || strings.Contains(ev.Message, host) {
			e.T.Errorf("Event %s shows a secret or the receiver's address: %s", ev.Reason, ev.Message)
		}
	}
}

// checkNotificationErrors fails the test on an error line of the notifications controller.
func checkNotificationErrors(t *testing.T, a *agentproc.Agent) {
	t.Helper()
	for _, line := range e2eenv.AgentErrors(a) {
		if strings.Contains(line, "notifications") {
			t.Errorf("the agent logged an error: %s", line)
		}
	}
}
