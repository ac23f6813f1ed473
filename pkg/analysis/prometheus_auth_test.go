package analysis

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

const scalarAnswer = `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0.25"]}}`

// authServer answers a query only with the expected Authorization header, and records the
// headers it saw.
func authServer(want string, seen *http.Header) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*seen = r.Header.Clone()
		if r.Header.Get("Authorization") != want {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(scalarAnswer))
	})
}

func secretRef(name, key string) appsv1alpha1.SecretValueSource {
	return appsv1alpha1.SecretValueSource{SecretKeyRef: appsv1alpha1.SecretKeyRef{Name: name, Key: key}}
}

func promWith(address string, edit func(*appsv1alpha1.PrometheusProvider)) *appsv1alpha1.AnalysisCheck {
	p := &appsv1alpha1.PrometheusProvider{Address: address, Query: "up"}
	edit(p)
	return &appsv1alpha1.AnalysisCheck{Name: "errors", SuccessCondition: "true", Provider: appsv1alpha1.AnalysisProvider{Prometheus: p}}
}

func TestPrometheusAuth(t *testing.T) {
	kube := k8sfake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prom", Namespace: "shop"},
		Data: map[string][]byte{"token": []byte("t0ken"), "password": []byte("pa:ss")}})
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("reader:pa:ss"))
	cases := []struct {
		name, want string
		edit       func(*appsv1alpha1.PrometheusProvider)
		wantErr    string
	}{
		{"bearer token", "Bearer t0ken", func(p *appsv1alpha1.PrometheusProvider) {
			b := secretRef("prom", "token")
			p.Auth = &appsv1alpha1.PrometheusAuth{BearerToken: &b}
		}, ""},
		{"basic", basic, func(p *appsv1alpha1.PrometheusProvider) {
			p.Auth = &appsv1alpha1.PrometheusAuth{Basic: &appsv1alpha1.BasicAuth{Username: "reader", Password: secretRef("prom", "password")}}
		}, ""},
		{"no auth is refused by the server", "Bearer t0ken", func(*appsv1alpha1.PrometheusProvider) {}, "401"},
		{"a missing Secret is an error, nothing sent", "Bearer t0ken", func(p *appsv1alpha1.PrometheusProvider) {
			b := secretRef("gone", "token")
			p.Auth = &appsv1alpha1.PrometheusAuth{BearerToken: &b}
		}, `reading Secret gone`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var seen http.Header
			srv := httptest.NewServer(authServer(c.want, &seen))
			defer srv.Close()
			check := promWith(srv.URL, func(p *appsv1alpha1.PrometheusProvider) {
				c.edit(p)
				tenant := "team-a"
				p.Headers = []appsv1alpha1.WebHeader{{Name: "X-Scope-OrgID", Value: &tenant}}
			})
			p, err := Env{Client: kube}.Provider(check, Target{Namespace: "shop"})
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.Measure(context.Background(), 1)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, %v; want an error containing %q", v, err, c.wantErr)
				}
				return
			}
			if err != nil || v != 0.25 {
				t.Fatalf("got %v, %v", v, err)
			}
			if seen.Get("X-Scope-OrgID") != "team-a" {
				t.Errorf("tenant header %q", seen.Get("X-Scope-OrgID"))
			}
		})
	}
}

// TLS is verified against the CA from a Secret; without it, the server's own certificate is
// not trusted.
func TestPrometheusTLSCA(t *testing.T) {
	var seen http.Header
	srv := httptest.NewTLSServer(authServer("", &seen))
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kube := k8sfake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prom-ca", Namespace: "shop"},
		Data: map[string][]byte{"ca.crt": caPEM, "junk": []byte("not a certificate")}})

	measure := func(edit func(*appsv1alpha1.PrometheusProvider)) error {
		p, err := Env{Client: kube}.Provider(promWith(srv.URL, edit), Target{Namespace: "shop"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Measure(context.Background(), 1)
		return err
	}
	if err := measure(func(*appsv1alpha1.PrometheusProvider) {}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
	ca := secretRef("prom-ca", "ca.crt")
	if err := measure(func(p *appsv1alpha1.PrometheusProvider) { p.TLS = &appsv1alpha1.TLSSettings{CA: &ca} }); err != nil {
		t.Errorf("with the CA: %v", err)
	}
	if err := measure(func(p *appsv1alpha1.PrometheusProvider) {
		p.TLS = &appsv1alpha1.TLSSettings{CA: &ca, ServerName: "prometheus.elsewhere"}
	}); err == nil || !strings.Contains(err.Error(), "prometheus.elsewhere") {
		t.Errorf("with a server name the certificate lacks: %v", err)
	}
	junk := secretRef("prom-ca", "junk")
	if err := measure(func(p *appsv1alpha1.PrometheusProvider) { p.TLS = &appsv1alpha1.TLSSettings{CA: &junk} }); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("with a Secret that holds no certificate: %v", err)
	}
}
