package analysis

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// webServer answers with status and body, and records the last request it saw.
type webServer struct {
	status int
	body   string
	last   *http.Request
	sent   string
}

func (s *webServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.last, s.sent = r, string(b)
	w.WriteHeader(s.status)
	_, _ = io.WriteString(w, s.body)
}

func webCheck(url string, edit func(*appsv1alpha1.WebProvider)) *appsv1alpha1.AnalysisCheck {
	p := &appsv1alpha1.WebProvider{URL: url}
	if edit != nil {
		edit(p)
	}
	return &appsv1alpha1.AnalysisCheck{Name: "slo", SuccessCondition: "result.ok == true", Provider: appsv1alpha1.AnalysisProvider{Web: p}}
}

func TestWebMeasuresTheJSONBody(t *testing.T) {
	srv := &webServer{status: 200, body: `{"ok": true, "latency": 0.2, "regions": ["a", "b"]}`}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	kube := k8sfake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "slo-token", Namespace: "shop"},
		Data: map[string][]byte{"token": []byte("Bearer s3cret")}})
	check := webCheck(ts.URL+"/slo", func(p *appsv1alpha1.WebProvider) {
		p.Method, p.Body = "POST", `{"service": "checkout"}`
		p.Headers = []appsv1alpha1.WebHeader{{Name: "X-Tenant", Value: str("team-a")},
			{Name: "Authorization", ValueFrom: &appsv1alpha1.SecretValueSource{SecretKeyRef: appsv1alpha1.SecretKeyRef{Name: "slo-token", Key: "token"}}}}
	})
	p, err := Env{Client: kube}.Provider(check, Target{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Measure(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatValue(v); got != `{"latency":0.2,"ok":true,"regions":["a","b"]}` {
		t.Errorf("value %s", got)
	}
	r := srv.last
	if r.Method != "POST" || r.URL.Path != "/slo" || srv.sent != `{"service": "checkout"}` ||
		r.Header.Get("X-Tenant") != "team-a" || r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s body %q headers %v", r.Method, r.URL, srv.sent, r.Header)
	}
	runner, err := NewRunner()
	if err != nil {
		t.Fatal(err)
	}
	conds, err := runner.compiler.compileCheck(webCheck("", func(*appsv1alpha1.WebProvider) {}))
	if err != nil {
		t.Fatal(err)
	}
	if phase, err := conds.judge(v); err != nil || phase != appsv1alpha1.AnalysisSuccessful {
		t.Errorf("judged %s, %v", phase, err)
	}
	// Only the Secret the check names was read, with a GET of it alone.
	for _, a := range kube.Actions() {
		if a.GetVerb() != "get" || a.GetResource().Resource != "secrets" {
			t.Errorf("unexpected API action %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestWebErrors(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"not 2xx", "down for maintenance", 503, "web response 503 Service Unavailable: down for maintenance"},
		{"not JSON", "<html>", 200, "web response is not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(&webServer{status: c.status, body: c.body})
			defer ts.Close()
			p, err := Env{}.Provider(webCheck(ts.URL, nil), Target{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Measure(context.Background(), 1); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TLS certificates are verified: a server whose certificate the agent does not trust is an
// error, never a measurement.
func TestWebVerifiesTLS(t *testing.T) {
	ts := httptest.NewTLSServer(&webServer{status: 200, body: `{"ok": true}`})
	defer ts.Close()
	p, err := Env{}.Provider(webCheck(ts.URL, nil), Target{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Measure(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("got %v, want a certificate error", err)
	}
	p, err = Env{Transport: ts.Client().Transport}.Provider(webCheck(ts.URL, nil), Target{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Measure(context.Background(), 1); err != nil {
		t.Fatalf("with the server's CA trusted: %v", err)
	}
}

func TestWebRefusesOtherSchemes(t *testing.T) {
	for _, u := range []string{"file:///etc/passwd", "gopher://x/", "http:///no-host", "ftp://example.com/"} {
		if _, err := (Env{}).Provider(webCheck(u, nil), Target{}); err == nil || !strings.Contains(err.Error(), "only http and https") {
			t.Errorf("%s: got %v", u, err)
		}
	}
}

func TestWebSecretErrors(t *testing.T) {
	ts := httptest.NewServer(&webServer{status: 200, body: `{}`})
	defer ts.Close()
	kube := k8sfake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "shop"},
		Data: map[string][]byte{"token": []byte("x\r\nX-Admin: 1")}})
	for _, c := range []struct{ secret, key, want string }{
		{"missing", "token", `reading Secret missing: secrets "missing" not found`},
		{"bad", "other", "Secret bad has no key other"},
		{"bad", "token", "holds a line break"},
	} {
		check := webCheck(ts.URL, func(p *appsv1alpha1.WebProvider) {
			p.Headers = []appsv1alpha1.WebHeader{{Name: "Authorization", ValueFrom: &appsv1alpha1.SecretValueSource{SecretKeyRef: appsv1alpha1.SecretKeyRef{Name: c.secret, Key: c.key}}}}
		})
		p, err := Env{Client: kube}.Provider(check, Target{Namespace: "shop"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Measure(context.Background(), 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s/%s: got %v, want %q", c.secret, c.key, err, c.want)
		}
	}
}

func TestSubstituteWeb(t *testing.T) {
	check := webCheck("https://slo.example/v1/{{args.service}}?window={{args.window}}", func(p *appsv1alpha1.WebProvider) {
		p.Method, p.Body = "POST", `{"service": "{{args.service}}", "max": {{args.max}}}`
		p.Headers = []appsv1alpha1.WebHeader{{Name: "X-Service", Value: str("{{args.service}}")}}
	})
	got, err := Substitute(check, Args{"service": `a b/"c"`, "window": "5m&x=1", "max": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	w := got.Provider.Web
	if w.URL != "https://slo.example/v1/a%20b%2F%22c%22?window=5m%26x%3D1" || w.Body != `{"service": "a b/\"c\"", "max": 0.5}` || *w.Headers[0].Value != `a b/"c"` {
		t.Errorf("url %s body %s header %s", w.URL, w.Body, *w.Headers[0].Value)
	}
	if _, err := Substitute(check, Args{"service": "x", "window": "1", "max": "1}, \"admin\": true"}); err == nil || !strings.Contains(err.Error(), "provider.web.body") {
		t.Errorf("a value breaking the JSON body: got %v", err)
	}
}
