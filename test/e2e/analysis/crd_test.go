package analysis

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

var checkHolders = schema.GroupVersionResource{Group: "analysistest.workload.dev", Version: "v1alpha1", Resource: "checkholders"}

// A check of each provider that the API server must accept, and one bad edit of it per rule,
// each refused with a message naming the field.
const (
	promCheckYAML = `
name: error-rate
interval: 30s
count: 5
failureLimit: 1
successCondition: result[0] < 0.05
provider:
  prometheus:
    address: http://prometheus.monitoring:9090
    query: sum(rate(errors_total[1m]))`
	jobCheckYAML = `
name: smoke
provider:
  job:
    template:
      spec:
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: smoke
              image: example.com/smoke:v1`
	podCheckYAML = `
name: pods
interval: 10s
provider:
  podHealth:
    maxRestarts: 1`
)

// installCheckHolderCRD generates the CRD of CheckHolder (testdata/analysistest), a test-only
// kind embedding the analysis types as spec.analysis[], with the project's controller-gen, and
// installs it: the schema and CEL rules of the analysis types are then checked by a real API
// server before a real kind uses them.
func installCheckHolderCRD(t *testing.T, cluster *localcluster.Cluster) {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen", "crd:generateEmbeddedObjectMeta=true",
		"paths=./test/e2e/analysis/testdata/analysistest/v1alpha1", "output:crd:artifacts:config="+dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, out)
	}
	if err := cluster.InstallCRDs(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
}

func TestCheckSchema(t *testing.T) {
	cluster := localcluster.Shared(t)
	installCheckHolderCRD(t, cluster)
	e, _ := namespace(t)
	dyn, ns := e.Dyn, e.NS
	for _, tc := range []struct {
		name  string
		check string
		edit  func(c map[string]any)
		want  string // "" = accepted
	}{
		{name: "prometheus accepted", check: promCheckYAML},
		{name: "job accepted", check: jobCheckYAML},
		{name: "podHealth accepted", check: podCheckYAML},
		{name: "two providers", check: promCheckYAML, edit: func(c map[string]any) { provider(c)["podHealth"] = map[string]any{} },
			want: "spec.analysis[0].provider: Invalid value: provider must set exactly one of prometheus, job, podHealth, web"},
		{name: "no provider", check: podCheckYAML, edit: func(c map[string]any) { delete(provider(c), "podHealth") },
			want: "spec.analysis[0].provider: Invalid value: provider must set exactly one of prometheus, job, podHealth, web"},
		{name: "prometheus without a condition", check: promCheckYAML, edit: func(c map[string]any) { delete(c, "successCondition") },
			want: "spec.analysis[0]: Invalid value: a prometheus or web check needs successCondition or failureCondition"},
		{name: "count without interval", check: podCheckYAML, edit: func(c map[string]any) { delete(c, "interval"); c["count"] = 3 },
			want: "spec.analysis[0]: Invalid value: count above 1 needs interval"},
		{name: "interval under 1s", check: podCheckYAML, edit: func(c map[string]any) { c["interval"] = "500ms" },
			want: "spec.analysis[0].interval: Invalid value: \"500ms\": interval must be at least 1s"},
		{name: "address not http", check: promCheckYAML, edit: func(c map[string]any) { prom(c)["address"] = "ftp://prometheus:9090" },
			want: "spec.analysis[0].provider.prometheus.address: Invalid value: \"ftp://prometheus:9090\": address must be an http or https URL"},
		{name: "address not a URL", check: promCheckYAML, edit: func(c map[string]any) { prom(c)["address"] = "prometheus:9090 " },
			want: "spec.analysis[0].provider.prometheus.address: Invalid value: \"prometheus:9090 \": address must be an http or https URL"},
		{name: "empty query", check: promCheckYAML, edit: func(c map[string]any) { prom(c)["query"] = "" },
			want: "spec.analysis[0].provider.prometheus.query: Invalid value: \"\": spec.analysis[0].provider.prometheus.query in body should be at least 1 chars long"},
		{name: "name not a DNS label", check: podCheckYAML, edit: func(c map[string]any) { c["name"] = "Error_Rate" },
			want: "spec.analysis[0].name: Invalid value: \"Error_Rate\": spec.analysis[0].name in body should match"},
		{name: "negative failureLimit", check: podCheckYAML, edit: func(c map[string]any) { c["failureLimit"] = -1 },
			want: "spec.analysis[0].failureLimit: Invalid value: -1: spec.analysis[0].failureLimit in body should be greater than or equal to 0"},
		{name: "count 0", check: podCheckYAML, edit: func(c map[string]any) { c["count"] = 0 },
			want: "spec.analysis[0].count: Invalid value: 0: spec.analysis[0].count in body should be greater than or equal to 1"},
		{name: "negative maxRestarts", check: podCheckYAML, edit: func(c map[string]any) { provider(c)["podHealth"] = map[string]any{"maxRestarts": -1} },
			want: "spec.analysis[0].provider.podHealth.maxRestarts: Invalid value: -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var check map[string]any
			if err := yaml.Unmarshal([]byte(tc.check), &check); err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(check)
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "analysistest.workload.dev/v1alpha1", "kind": "CheckHolder",
				"metadata": map[string]any{"generateName": "holder-"},
				"spec":     map[string]any{"analysis": []any{check}},
			}}
			_, err := dyn.Resource(checkHolders).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted; want refused with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("refused with %v\nwant %q", err, tc.want)
			}
		})
	}
}

func provider(c map[string]any) map[string]any { return c["provider"].(map[string]any) }

func prom(c map[string]any) map[string]any { return provider(c)["prometheus"].(map[string]any) }
