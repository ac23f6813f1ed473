package analyze

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

// sloServer answers /slo/<service> with the error ratio of that service, and 503 for "down".
func sloServer(t *testing.T) *httptest.Server {
	ratios := map[string]string{"checkout": "0.01", "payments": "0.2"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc := strings.TrimPrefix(r.URL.Path, "/slo/")
		ratio, ok := ratios[svc]
		if !ok {
			http.Error(w, "no such service", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"errorRatio": %s}`, ratio)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const template = `apiVersion: apps.workload.dev/v1alpha1
kind: ClusterAnalysisTemplate
metadata:
  name: error-rate
spec:
  args:
  - name: service
  - name: max
    value: "0.05"
  checks:
  - name: error-ratio
    successCondition: result.errorRatio < {{args.max}}
    provider:
      web:
        url: %s/slo/{{args.service}}
`

func templateFile(t *testing.T, url string) string {
	return writeTemplate(t, "", url)
}

// writeTemplate writes the template after the documents of before (YAML ending with ---).
func writeTemplate(t *testing.T, before, url string) string {
	p := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(p, []byte(before+fmt.Sprintf(template, url)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// otherFile is a manifest of a Service and a TApp: no template in it.
func otherFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "tapp.yaml")
	doc := "apiVersion: v1\nkind: Service\nmetadata: {name: gameserver}\nspec: {clusterIP: None}\n---\n" +
		"apiVersion: apps.workload.dev/v1alpha1\nkind: TApp\nmetadata: {name: gameserver}\n"
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAnalyzeTemplateFile(t *testing.T) {
	srv := sloServer(t)
	file := templateFile(t, srv.URL)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"template-pass", []string{"-f", file, "--arg", "service=checkout"}, 0},
		{"template-fail", []string{"-f", file, "--arg", "service=payments"}, 1},
		{"template-fail-with-a-looser-limit-passes", []string{"-f", file, "--arg", "service=payments", "--arg", "max=0.5"}, 0},
		{"template-inconclusive", []string{"-f", file, "--arg", "service=down"}, 2},
		{"error-template-unset-argument", []string{"-f", file}, 1},
		{"error-arg-without-file", []string{"canary/checkout", "--arg", "service=x"}, 1},
		{"error-arg-not-name-value", []string{"-f", file, "--arg", "service"}, 1},
		{"error-file-and-template", []string{"-f", file, "catpl/error-rate"}, 1},
		{"error-arg-twice", []string{"-f", file, "--arg", "service=checkout", "--arg", "service=payments"}, 1},
		{"error-arg-unknown", []string{"-f", file, "--arg", "service=checkout", "--arg", "maximum=0.5"}, 1},
		{"error-file-not-a-template", []string{"-f", otherFile(t)}, 1},
		{"template-beside-other-objects", []string{"-f", writeTemplate(t, "apiVersion: v1\nkind: Service\nmetadata: {name: slo}\nspec: {clusterIP: None}\n---\n", srv.URL), "--arg", "service=checkout"}, 0},
		{"error-file-two-templates", []string{"-f", writeTemplate(t, fmt.Sprintf(template, srv.URL)+"---\n", srv.URL)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdAnalyze, nil, tc.args...)
			if res.Code != tc.code {
				t.Errorf("exit %d, want %d (%s)", res.Code, tc.code, res.Fatal)
			}
			cmdtest.Golden(t, tc.name, res.Transcript())
			if len(res.Actions) != 0 {
				t.Errorf("API actions %v: analyze of a file reads nothing", res.Actions)
			}
		})
	}
}

// canary/NAME runs the Canary's inline checks and its templates' checks, expanded with its
// arguments; it changes nothing.
func TestAnalyzeCanary(t *testing.T) {
	srv := sloServer(t)
	objects := func(withTemplate bool) []runtime.Object {
		c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: cmdtest.Namespace}}
		c.Spec.Replicas = 10
		c.Spec.StableRef.Name = "checkout-stable"
		c.Spec.Canary.Name = "checkout-canary"
		c.Spec.Analysis = []v1alpha1.AnalysisCheck{
			{Name: "payments-budget", SuccessCondition: "result.errorRatio < 0.5",
				Provider: v1alpha1.AnalysisProvider{Web: &v1alpha1.WebProvider{URL: srv.URL + "/slo/payments"}}},
			{Name: "pods", Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{}}},
			{Name: "slo", TemplateRef: &v1alpha1.AnalysisTemplateRef{Kind: v1alpha1.KindClusterAnalysisTemplate, Name: "error-rate"},
				Args: []v1alpha1.AnalysisArgValue{{Name: "service", ValueFrom: &v1alpha1.AnalysisArgSource{FieldPath: "metadata.name"}}}},
		}
		objs := []runtime.Object{c}
		if withTemplate {
			tpl := &v1alpha1.ClusterAnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: "error-rate"},
				Spec: v1alpha1.AnalysisTemplateSpec{
					Args: []v1alpha1.AnalysisArg{{Name: "service"}},
					Checks: []v1alpha1.AnalysisCheck{{Name: "error-ratio", SuccessCondition: "result.errorRatio < 0.05",
						Provider: v1alpha1.AnalysisProvider{Web: &v1alpha1.WebProvider{URL: srv.URL + "/slo/{{args.service}}"}}}},
				}}
			objs = append(objs, tpl)
		}
		return objs
	}
	for _, tc := range []struct {
		name         string
		withTemplate bool
	}{
		{"canary-with-template", true},
		{"canary-template-missing", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdAnalyze, objects(tc.withTemplate), "canary/checkout")
			if res.Code != 2 {
				t.Errorf("exit %d, want 2: the podHealth check is not run (%s)", res.Code, res.Fatal)
			}
			cmdtest.Golden(t, tc.name, res.Transcript())
			cmdtest.AssertUnchanged(t, res, objects(tc.withTemplate))
		})
	}
}

// catpl/NAME and atpl/NAME run a template of the cluster with --arg, reading nothing but the
// template (and changing nothing).
func TestAnalyzeTemplateOfTheCluster(t *testing.T) {
	srv := sloServer(t)
	spec := v1alpha1.AnalysisTemplateSpec{
		Args: []v1alpha1.AnalysisArg{{Name: "service"}},
		Checks: []v1alpha1.AnalysisCheck{{Name: "error-ratio", SuccessCondition: "result.errorRatio < 0.05",
			Provider: v1alpha1.AnalysisProvider{Web: &v1alpha1.WebProvider{URL: srv.URL + "/slo/{{args.service}}"}}}},
	}
	objects := func() []runtime.Object {
		return []runtime.Object{
			&v1alpha1.ClusterAnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: "error-rate"}, Spec: *spec.DeepCopy()},
			&v1alpha1.AnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: "error-rate", Namespace: cmdtest.Namespace}, Spec: *spec.DeepCopy()},
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"catpl-pass", []string{"catpl/error-rate", "--arg", "service=checkout"}, 0},
		{"atpl-fail", []string{"analysistemplate", "error-rate", "--arg", "service=payments"}, 1},
		{"catpl-inconclusive", []string{"clusteranalysistemplates.apps.workload.dev/error-rate", "--arg", "service=down"}, 2},
		{"error-catpl-unset-argument", []string{"catpl/error-rate"}, 1},
		{"error-catpl-missing", []string{"catpl/nope", "--arg", "service=checkout"}, 1},
		{"error-catpl-unknown-argument", []string{"catpl/error-rate", "--arg", "service=checkout", "--arg", "svc=checkout"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdAnalyze, objects(), tc.args...)
			if res.Code != tc.code {
				t.Errorf("exit %d, want %d (%s)", res.Code, tc.code, res.Fatal)
			}
			cmdtest.Golden(t, tc.name, res.Transcript())
			cmdtest.AssertUnchanged(t, res, objects())
		})
	}
}
