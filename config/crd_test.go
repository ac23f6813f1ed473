package config

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/crdvalidate"
)

// The API server refuses a CRD whose schema is not structural, whose defaults do not validate, or
// whose CEL rules do not compile or may cost too much; this runs that same validation.
func TestCRDsPassAPIServerValidation(t *testing.T) {
	crds := mustCRDs(t)
	for _, crd := range crds {
		errs, err := crdvalidate.CheckDefinition(context.Background(), crd)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			t.Errorf("%s: %v", crd.Name, e)
		}
	}
}

func TestCRDNamesSubresourcesAndColumns(t *testing.T) {
	want := map[string]struct {
		kind, shortName string
		scale, status   bool
		scope           apiextensionsv1.ResourceScope
		columns         []string
	}{
		"tapps.apps.workload.dev":             {"TApp", "tapp", true, true, apiextensionsv1.NamespaceScoped, []string{"Desired", "Ready", "Updated", "Status", "Age"}},
		"uniteddeployments.apps.workload.dev": {"UnitedDeployment", "ud", true, true, apiextensionsv1.NamespaceScoped, []string{"Desired", "Ready", "Updated", "Updated-Ready", "Age"}},
		"canaries.apps.workload.dev":          {"Canary", "canary", true, true, apiextensionsv1.NamespaceScoped, []string{"Desired", "Batch", "Canary", "Stable", "Phase", "Age"}},
		// Templates are written by people and read by the agent: nothing to report, no status.
		"analysistemplates.apps.workload.dev":        {"AnalysisTemplate", "atpl", false, false, apiextensionsv1.NamespaceScoped, []string{"Checks", "Args", "Age"}},
		"clusteranalysistemplates.apps.workload.dev": {"ClusterAnalysisTemplate", "catpl", false, false, apiextensionsv1.ClusterScoped, []string{"Checks", "Args", "Age"}},
	}
	crds := mustCRDs(t)
	if len(crds) != len(want) {
		t.Fatalf("got %d CRDs, want %d", len(crds), len(want))
	}
	for _, crd := range crds {
		w, ok := want[crd.Name]
		if !ok {
			t.Errorf("unexpected CRD %s", crd.Name)
			continue
		}
		if crd.Spec.Names.Kind != w.kind {
			t.Errorf("%s: kind %q, want %q", crd.Name, crd.Spec.Names.Kind, w.kind)
		}
		if !contains(crd.Spec.Names.ShortNames, w.shortName) {
			t.Errorf("%s: short names %v lack %q", crd.Name, crd.Spec.Names.ShortNames, w.shortName)
		}
		if !contains(crd.Spec.Names.Categories, "workload") {
			t.Errorf("%s: categories %v lack workload", crd.Name, crd.Spec.Names.Categories)
		}
		if len(crd.Spec.Versions) != 1 {
			t.Fatalf("%s: %d versions, want 1", crd.Name, len(crd.Spec.Versions))
		}
		v := crd.Spec.Versions[0]
		if v.Name != "v1alpha1" || !v.Served || !v.Storage {
			t.Errorf("%s: version %s served=%v storage=%v", crd.Name, v.Name, v.Served, v.Storage)
		}
		if crd.Spec.Scope != w.scope {
			t.Errorf("%s: scope %s, want %s", crd.Name, crd.Spec.Scope, w.scope)
		}
		if got := v.Subresources != nil && v.Subresources.Status != nil; got != w.status {
			t.Errorf("%s: status subresource %v, want %v", crd.Name, got, w.status)
		}
		if got := v.Subresources != nil && v.Subresources.Scale != nil; got != w.scale {
			t.Errorf("%s: scale subresource %v, want %v", crd.Name, got, w.scale)
		} else if got && (v.Subresources.Scale.SpecReplicasPath != ".spec.replicas" || v.Subresources.Scale.LabelSelectorPath == nil) {
			t.Errorf("%s: scale subresource %+v", crd.Name, v.Subresources.Scale)
		}
		var cols []string
		for _, c := range v.AdditionalPrinterColumns {
			if c.Priority == 0 {
				cols = append(cols, c.Name)
			}
		}
		if strings.Join(cols, ",") != strings.Join(w.columns, ",") {
			t.Errorf("%s: printer columns %v, want %v", crd.Name, cols, w.columns)
		}
	}
}

// kubectl explain shows these descriptions; a field without one leaves a person guessing.
func TestEveryFieldHasADescription(t *testing.T) {
	for _, crd := range mustCRDs(t) {
		for _, v := range crd.Spec.Versions {
			walk(v.Schema.OpenAPIV3Schema, crd.Name, func(path string, s *apiextensionsv1.JSONSchemaProps) {
				// The root metadata belongs to the API server, which forbids describing it.
				if path == crd.Name+".metadata" {
					return
				}
				if strings.TrimSpace(s.Description) == "" {
					t.Errorf("%s has no description", path)
				}
			})
		}
	}
}

func walk(s *apiextensionsv1.JSONSchemaProps, path string, visit func(string, *apiextensionsv1.JSONSchemaProps)) {
	for name, p := range s.Properties {
		child := path + "." + name
		visit(child, &p)
		walk(&p, child, visit)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema, path+"[]", visit)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema, path+"{}", visit)
	}
}

func mustCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	return crds
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
