package analysis

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// authProxy puts the real Prometheus behind a bearer token and a tenant header, as a hosted
// Prometheus (Mimir, Thanos) is.
func authProxy(t *testing.T, target, token string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("X-Scope-OrgID") != "shop" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A Prometheus check authenticates with a token from a Secret of the release's namespace, read
// from the real API server; a wrong token is never a pass.
func TestPrometheusBehindAuthentication(t *testing.T) {
	_, prom := startApp(t, 0.01)
	address := authProxy(t, prom.URL, "s3cret")
	e, _ := namespace(t)
	for name, token := range map[string]string{"right": "s3cret", "wrong": "guess"} {
		e2eenv.Create(t, e.Ctx, e.Kube.CoreV1().Secrets(e.NS), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "prom-" + name}, Data: map[string][]byte{"token": []byte(token)}})
	}
	check := func(secret string) *v1alpha1.AnalysisCheck {
		c := errorRateCheck(address, 3)
		c.ConsecutiveErrorLimit = ptr.To[int32](1)
		tenant := "shop"
		c.Provider.Prometheus.Headers = []v1alpha1.WebHeader{{Name: "X-Scope-OrgID", Value: &tenant}}
		c.Provider.Prometheus.Auth = &v1alpha1.PrometheusAuth{BearerToken: &v1alpha1.SecretValueSource{
			SecretKeyRef: v1alpha1.SecretKeyRef{Name: secret, Key: "token"}}}
		return c
	}
	env := analysis.Env{Client: e.Kube}
	for _, tc := range []struct {
		secret string
		want   v1alpha1.AnalysisPhase
	}{{"prom-right", v1alpha1.AnalysisSuccessful}, {"prom-wrong", v1alpha1.AnalysisInconclusive}, {"prom-missing", v1alpha1.AnalysisInconclusive}} {
		t.Run(tc.secret, func(t *testing.T) {
			c := check(tc.secret)
			p, err := env.Provider(c, analysis.Target{Namespace: e.NS})
			if err != nil {
				t.Fatal(err)
			}
			st := run(t, c, p)
			if st.Phase != tc.want || (tc.want != v1alpha1.AnalysisSuccessful && st.Successful != 0) {
				t.Fatalf("phase %s (%d successful): %s; want %s", st.Phase, st.Successful, st.Message, tc.want)
			}
		})
	}
}
