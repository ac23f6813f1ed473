package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// received is one request a test receiver got.
type received struct {
	method, path string
	header       http.Header
	body         map[string]any
}

// receiver answers every request with status and records it.
func receiver(t *testing.T, status int, answer string) (*httptest.Server, *[]received) {
	t.Helper()
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		got = append(got, received{r.Method, r.URL.Path, r.Header.Clone(), body})
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func config(t *testing.T, data map[string]string, secret map[string]string) *Config {
	t.Helper()
	s := &corev1.Secret{Data: map[string][]byte{}}
	for k, v := range secret {
		s.Data[k] = []byte(v)
	}
	c, err := LoadConfig(&corev1.ConfigMap{Data: data}, s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pausedCanary is step 1 of 3 waiting for promotion, with a check's values.
func pausedCanary() *v1alpha1.Canary {
	cn := canaryAt(1, v1alpha1.BatchPaused, v1alpha1.CanaryPaused,
		cond(v1alpha1.ConditionProgressing, v1alpha1.ReasonWaitingForPromotion, metav1.ConditionFalse))
	cn.Status.Message = "step 1/3 complete: waiting for promotion"
	cn.Spec.Canary.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx:1.27"}}
	cn.Status.Analysis = []v1alpha1.AnalysisCheckStatus{{Name: "errors", Phase: v1alpha1.AnalysisPhase("Successful"),
		Measurements: []v1alpha1.AnalysisMeasurement{{Value: "0.01"}, {Value: "0.02"}}}}
	return cn
}

func message(t *testing.T, c *Config, cn *v1alpha1.Canary, trigger string) Message {
	t.Helper()
	tr, _ := TriggerNamed(trigger)
	tmpl, err := c.TemplateFor(tr.Name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tmpl.Render(NewData(cn, tr))
	if err != nil {
		t.Fatal(err)
	}
	m.ID = "id-1"
	return m
}

// The default message names the Canary, the step, the images, the checks' values and the
// command to act.
func TestDefaultTemplates(t *testing.T) {
	m := message(t, &Config{}, pausedCanary(), OnPaused)
	want := `canary/web: paused at step 1 of 3, waiting for promotion (namespace shop)
step 1/3 complete: waiting for promotion
Images: web=nginx:1.27
Check errors: Successful, values 0.01, 0.02
To act: kubectl workload promote canary/web -n shop`
	if m.Text != want {
		t.Errorf("message:\n%s\nwant:\n%s", m.Text, want)
	}
	for _, tr := range Triggers {
		if defaultTitles[tr.Name] == "" {
			t.Errorf("%s has no default title", tr.Name)
		}
		if m := message(t, &Config{}, pausedCanary(), tr.Name); !strings.Contains(m.Title, "canary/web") {
			t.Errorf("%s: title %q does not name the Canary", tr.Name, m.Title)
		}
	}
}

func TestTemplateOverrides(t *testing.T) {
	c := config(t, map[string]string{
		"template.short":       "title: '{{.Trigger}} {{.Canary}}'\nmessage: 'step {{.Step}}'",
		"template.on-paused":   "title: 'by name {{.Canary}}'",
		"trigger.on-completed": "template: short",
	}, nil)
	if m := message(t, c, pausedCanary(), OnCompleted); m.Title != "on-completed web" || m.Text != "step 1" {
		t.Errorf("trigger.on-completed's template: %q %q", m.Title, m.Text)
	}
	if m := message(t, c, pausedCanary(), OnPaused); m.Title != "by name web" || !strings.Contains(m.Text, "To act:") {
		t.Errorf("template named like the trigger: %q %q", m.Title, m.Text)
	}
	bad := config(t, map[string]string{"trigger.on-paused": "template: missing"}, nil)
	if _, err := bad.TemplateFor(OnPaused); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("a trigger naming a missing template: %v", err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
		want string
	}{
		{"secret key missing", map[string]string{"service.slack": "token: $nope"}, "service.slack: token: $nope: no such key in Secret workload-notifications-secret"},
		{"slack needs one of", map[string]string{"service.slack": "apiURL: https://x"}, "set exactly one of webhookURL"},
		{"not a URL, not shown", map[string]string{"service.webhook.a": "url: $bad"}, "url must be an absolute http or https URL"},
		{"unknown field", map[string]string{"service.teams": "urls: [a]"}, `unknown field "urls"`},
		{"unknown key", map[string]string{"services.slack": "x"}, "unknown key"},
		{"unknown trigger", map[string]string{"trigger.on-sync": "template: x"}, "not a built-in trigger"},
		{"webhook named slack", map[string]string{"service.webhook.slack": "url: https://x"}, "a webhook needs a name other than slack and teams"},
		{"bad template", map[string]string{"template.x": "title: '{{.Nope'"}, "title:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret := &corev1.Secret{Data: map[string][]byte{"bad": []byte("s3cr3t-not-a-url")}}
			_, err := LoadConfig(&corev1.ConfigMap{Data: tc.data}, secret)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

// The webhook: method, URL, headers from the Secret, a body template, the notification's id.
func TestWebhook(t *testing.T) {
	srv, got := receiver(t, http.StatusOK, "")
	c := config(t, map[string]string{
		"service.webhook.hook":  "url: " + srv.URL + "/hook\nmethod: put\nheaders:\n- name: Authorization\n  value: Bearer $token",
		"service.webhook.plain": "url: " + srv.URL + "/plain\nbody: '{\"say\": {{json .Title}}, \"id\": {{json .ID}}}'",
	}, map[string]string{"token": "t0ken"})
	m := message(t, c, pausedCanary(), OnPaused)
	for _, d := range []Destination{{Service: "hook"}, {Service: "plain"}} {
		if err := c.Deliver(context.Background(), http.DefaultClient, d, m); err != nil {
			t.Fatal(err)
		}
	}
	if len(*got) != 2 {
		t.Fatalf("%d requests", len(*got))
	}
	hook, plain := (*got)[0], (*got)[1]
	if hook.method != http.MethodPut || hook.path != "/hook" || hook.header.Get("Authorization") != "Bearer t0ken" || hook.header.Get(HeaderID) != "id-1" {
		t.Errorf("webhook request %s %s %v", hook.method, hook.path, hook.header)
	}
	if hook.body["trigger"] != OnPaused || hook.body["canary"] != "web" || hook.body["namespace"] != "shop" || hook.body["step"] != 1.0 ||
		hook.body["command"] != "kubectl workload promote canary/web -n shop" || hook.body["id"] != "id-1" {
		t.Errorf("default body %v", hook.body)
	}
	if !reflect.DeepEqual(plain.body, map[string]any{"say": m.Title, "id": "id-1"}) {
		t.Errorf("templated body %v", plain.body)
	}
}

// Slack's documented payloads (https://api.slack.com/reference/messaging/payload, Block Kit):
// an incoming webhook takes text and blocks; chat.postMessage takes the channel too, with the
// bot token as a Bearer, and answers 200 {"ok": false, "error": ...} when it refuses.
func TestSlack(t *testing.T) {
	hook, got := receiver(t, http.StatusOK, "ok")
	api, apiGot := receiver(t, http.StatusOK, `{"ok": true}`)
	refusing, _ := receiver(t, http.StatusOK, `{"ok": false, "error": "channel_not_found"}`)
	m := message(t, &Config{}, pausedCanary(), OnPaused)

	incoming := config(t, map[string]string{"service.slack": "webhookURL: $slack-url"}, map[string]string{"slack-url": hook.URL + "/services/T0/B0/secret"})
	if err := incoming.Deliver(context.Background(), http.DefaultClient, Destination{Service: "slack"}, m); err != nil {
		t.Fatal(err)
	}
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": m.Title}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": m.Text}},
	}
	if r := (*got)[0]; r.path != "/services/T0/B0/secret" || !reflect.DeepEqual(r.body, map[string]any{"text": m.Title, "blocks": blocks}) {
		t.Errorf("incoming webhook: %s %v", r.path, r.body)
	}

	bot := config(t, map[string]string{"service.slack": "token: $slack-token\napiURL: " + api.URL}, map[string]string{"slack-token": "xoxb-1"})
	if err := bot.Deliver(context.Background(), http.DefaultClient, Destination{"slack", "#releases"}, m); err != nil {
		t.Fatal(err)
	}
	if r := (*apiGot)[0]; r.path != "/chat.postMessage" || r.header.Get("Authorization") != "Bearer xoxb-1" ||
		!reflect.DeepEqual(r.body, map[string]any{"channel": "#releases", "text": m.Title, "blocks": blocks}) {
		t.Errorf("chat.postMessage: %s %v %v", r.path, r.header, r.body)
	}
	refused := config(t, map[string]string{"service.slack": "token: $slack-token\napiURL: " + refusing.URL}, map[string]string{"slack-token": "xoxb-1"})
	err := refused.Deliver(context.Background(), http.DefaultClient, Destination{"slack", "#nope"}, m)
	if err == nil || !strings.Contains(err.Error(), "channel_not_found") {
		t.Errorf("refused message: %v", err)
	}
}

// Teams Workflows' documented payload: a message with one Adaptive Card attachment.
func TestTeams(t *testing.T) {
	srv, got := receiver(t, http.StatusAccepted, "")
	c := config(t, map[string]string{"service.teams": "recipientUrls:\n  releases: $teams-releases"}, map[string]string{"teams-releases": srv.URL + "/workflows/abc"})
	m := message(t, c, pausedCanary(), OnPaused)
	if err := c.Deliver(context.Background(), http.DefaultClient, Destination{"teams", "releases"}, m); err != nil {
		t.Fatal(err)
	}
	r := (*got)[0]
	att := r.body["attachments"].([]any)[0].(map[string]any)
	card := att["content"].(map[string]any)
	body := card["body"].([]any)
	if r.body["type"] != "message" || att["contentType"] != "application/vnd.microsoft.card.adaptive" || att["contentUrl"] != nil ||
		card["type"] != "AdaptiveCard" || card["$schema"] != "http://adaptivecards.io/schemas/adaptive-card.json" || card["version"] != "1.4" ||
		body[0].(map[string]any)["text"] != m.Title || body[1].(map[string]any)["text"] != m.Text || body[2].(map[string]any)["type"] != "FactSet" {
		t.Errorf("payload %v", r.body)
	}
	if err := c.Deliver(context.Background(), http.DefaultClient, Destination{"teams", "other"}, m); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("unknown recipient: %v", err)
	}
}

// No error of a delivery shows the URL, a header or a secret, whatever failed.
func TestDeliverErrorsShowNoSecret(t *testing.T) {
	failing, _ := receiver(t, http.StatusInternalServerError, "echo: s3cret-token")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	secrets := map[string]string{"url": failing.URL + "/services/s3cret-path", "gone": closed.URL + "/services/s3cret-path", "token": "s3cret-token"}
	c := config(t, map[string]string{
		"service.webhook.failing": "url: $url\nheaders:\n- name: X-Token\n  value: $token",
		"service.webhook.gone":    "url: $gone",
	}, secrets)
	m := message(t, c, pausedCanary(), OnPaused)
	for _, d := range []Destination{{Service: "failing"}, {Service: "gone"}} {
		err := c.Deliver(context.Background(), http.DefaultClient, d, m)
		if err == nil {
			t.Fatalf("%s: delivered", d)
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("%s: the error shows a secret or the URL: %v", d, err)
		}
	}
}

// examples/notifications.yaml is a setup the agent reads without an error, and its Canary
// subscribes to services it defines.
func TestExampleSetup(t *testing.T) {
	data, err := os.ReadFile("../../examples/notifications.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	var secret *corev1.Secret
	var cn *v1alpha1.Canary
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			t.Fatal(err)
		}
		var into any
		switch kind.Kind {
		case "ConfigMap":
			cm = &corev1.ConfigMap{}
			into = cm
		case "Secret":
			secret = &corev1.Secret{}
			into = secret
		case "Canary":
			cn = &v1alpha1.Canary{}
			into = cn
		default:
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatal(err)
		}
	}
	c, err := LoadConfig(cm, secret)
	if err != nil {
		t.Fatal(err)
	}
	subs, err := ParseSubscriptions(cn.Annotations, nil)
	if err != nil || len(subs) != 4 {
		t.Fatalf("subscriptions %v, %v", subs, err)
	}
	for trigger, ds := range subs {
		for _, d := range ds {
			if _, ok := c.Services[d.Service]; !ok {
				t.Errorf("%s subscribes to %s, which the ConfigMap does not define", trigger, d.Service)
			}
		}
		tr, _ := TriggerNamed(trigger)
		tmpl, err := c.TemplateFor(trigger)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tmpl.Render(NewData(pausedCanary(), tr)); err != nil {
			t.Errorf("%s: %v", trigger, err)
		}
	}
	m := message(t, c, pausedCanary(), OnCompleted)
	if m.Title != "web is out: web=nginx:1.27" {
		t.Errorf("the example's template: %q", m.Title)
	}
	w := c.Services["deploy-bot"].(*Webhook)
	req, err := w.Request(context.Background(), m, "")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil || got["event"] != OnCompleted || got["canary"] != "canary/web -n shop" {
		t.Errorf("the example's body template: %s (%v)", body, err)
	}
}
