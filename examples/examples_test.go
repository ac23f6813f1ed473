// Package examples holds the manifests people copy; these tests keep them honest without a
// cluster. The API-server check of the same files runs against the local control plane.
package examples

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/config"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/crdvalidate"
)

// Every example decodes strictly (an unknown or misspelt field is an error) into its Go type and
// passes the CRD's schema and CEL rules.
func TestExamplesAreValid(t *testing.T) {
	v := validator(t)
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 5 {
		t.Fatalf("found %d examples, want at least one per kind and one UnitedDeployment per subset kind", len(files))
	}
	kinds := map[string]int{}
	for _, file := range files {
		for i, doc := range documents(t, file) {
			kind := decodeStrict(t, file, doc)
			kinds[kind]++
			if !strings.HasPrefix(apiVersion(t, doc), v1alpha1.GroupName+"/") {
				continue
			}
			if errs := validate(t, v, doc); len(errs) > 0 {
				t.Errorf("%s document %d is refused: %v", file, i, errs.ToAggregate())
			}
		}
	}
	for _, kind := range []string{"TApp", "UnitedDeployment", "Canary", "AnalysisTemplate", "ClusterAnalysisTemplate"} {
		if kinds[kind] == 0 {
			t.Errorf("no example of %s", kind)
		}
	}
}

// Every manifest in invalid/ names, in its first line, the message it must be refused with.
func TestInvalidExamplesAreRefusedWithTheirMessage(t *testing.T) {
	v := validator(t)
	files, _ := filepath.Glob("invalid/*.yaml")
	if len(files) == 0 {
		t.Fatal("no invalid examples")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := ExpectedError(data)
			if !ok {
				t.Fatalf("first line must be '# expect-error: <message>'")
			}
			docs := documents(t, file)
			if len(docs) != 1 {
				t.Fatalf("want exactly one document, got %d", len(docs))
			}
			errs := validate(t, v, docs[0])
			if errs == nil {
				t.Fatalf("accepted; want refused with %q", want)
			}
			if !strings.Contains(errs.ToAggregate().Error(), want) {
				t.Errorf("refused with %q; want a message containing %q", errs.ToAggregate(), want)
			}
		})
	}
}

func validator(t *testing.T) *crdvalidate.Validator {
	t.Helper()
	crds, err := config.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	v, err := crdvalidate.New(crds)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func documents(t *testing.T, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		var probe map[string]interface{}
		if err := yaml.Unmarshal(doc, &probe); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(probe) > 0 {
			docs = append(docs, doc)
		}
	}
	return docs
}

func apiVersion(t *testing.T, doc []byte) string {
	var meta struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatal(err)
	}
	return meta.APIVersion
}

func decodeStrict(t *testing.T, file string, doc []byte) string {
	t.Helper()
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		t.Fatal(err)
	}
	var into interface{}
	switch meta.Kind {
	case "TApp":
		into = &v1alpha1.TApp{}
	case "UnitedDeployment":
		into = &v1alpha1.UnitedDeployment{}
	case "Canary":
		into = &v1alpha1.Canary{}
	case "AnalysisTemplate":
		into = &v1alpha1.AnalysisTemplate{}
	case "ClusterAnalysisTemplate":
		into = &v1alpha1.ClusterAnalysisTemplate{}
	case "Deployment":
		into = &appsv1.Deployment{}
	case "StatefulSet":
		into = &appsv1.StatefulSet{}
	case "DaemonSet":
		into = &appsv1.DaemonSet{}
	case "Service":
		into = &corev1.Service{}
	case "ConfigMap":
		into = &corev1.ConfigMap{}
	case "Secret":
		into = &corev1.Secret{}
	case "HTTPRoute":
		into = &gatewayv1.HTTPRoute{}
	case "HorizontalPodAutoscaler":
		into = &autoscalingv2.HorizontalPodAutoscaler{}
	default:
		t.Fatalf("%s: no Go type known for kind %q", file, meta.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Errorf("%s: %s does not decode strictly: %v", file, meta.Kind, err)
	}
	return meta.Kind
}

func validate(t *testing.T, v *crdvalidate.Validator, doc []byte) field.ErrorList {
	t.Helper()
	// Decode numbers as the API server does: whole numbers become int64, not float64.
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]interface{}
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	_, errs, err := v.Validate(context.Background(), obj)
	if err != nil {
		t.Fatal(err)
	}
	return errs
}
