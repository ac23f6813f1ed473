// Command crdtrim post-processes the CRDs that controller-gen writes. It shortens the
// descriptions inside embedded Kubernetes types (pod templates, StatefulSet and Deployment specs,
// PVC templates, node selector terms) to their first sentence, and it describes the fields of
// embedded object metadata, which controller-gen emits without a description.
//
// Why: the UnitedDeployment CRD embeds four pod templates; with every upstream description in full
// it is 1.3 MB of JSON, which with its managedFields no longer fits etcd's 1.5 MiB object limit.
// Our own fields keep their whole description, and every field keeps at least one sentence, so
// `kubectl explain` still says what each one is.
//
// Usage: crdtrim FILE...   (rewrites each CRD file in place)
package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// foreignRoots lists, per CRD, the schema paths whose subtrees are upstream Kubernetes types.
// A path is dot-separated property names; "[]" steps into array items and "{}" into map values.
var foreignRoots = map[string][]string{
	"tapps.apps.workload.dev": tappRoots("spec"),
	"uniteddeployments.apps.workload.dev": append(tappRoots("spec.template.tappTemplate.spec"),
		"spec.template.statefulSetTemplate.spec",
		"spec.template.deploymentTemplate.spec",
		"spec.topology.subsets.[].nodeSelectorTerm",
		"spec.topology.subsets.[].tolerations",
	),
	"canaries.apps.workload.dev":                 {"spec.canary.template", "spec.analysis.[].provider.job.template"},
	"analysistemplates.apps.workload.dev":        {"spec.checks.[].provider.job.template"},
	"clusteranalysistemplates.apps.workload.dev": {"spec.checks.[].provider.job.template"},
}

func tappRoots(spec string) []string {
	return []string{
		spec + ".template",
		spec + ".templatePool.{}",
		spec + ".volumeClaimTemplates",
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdtrim FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := trimFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdtrim: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func trimFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return err
	}
	roots, ok := foreignRoots[crd.Name]
	if !ok {
		return fmt.Errorf("no foreign roots known for CRD %q: add it to crdtrim", crd.Name)
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		// The root metadata is the API server's own and must stay bare.
		for _, top := range []string{"spec", "status"} {
			if p, ok := v.Schema.OpenAPIV3Schema.Properties[top]; ok {
				describeMetadata(&p, false)
				v.Schema.OpenAPIV3Schema.Properties[top] = p
			}
		}
		for _, root := range roots {
			if !trimAt(v.Schema.OpenAPIV3Schema, strings.Split(root, ".")) {
				return fmt.Errorf("version %s has no schema at %s", v.Name, root)
			}
		}
	}
	out, err := yaml.Marshal(&crd)
	if err != nil {
		return err
	}
	// Generated CRDs are applied as they are: drop the status stanza that marshalling adds.
	out = []byte(strings.Replace(string(out), "status:\n  acceptedNames:\n    kind: \"\"\n    plural: \"\"\n  conditions: null\n  storedVersions: null\n", "", 1))
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// metadataDescriptions describe the fields controller-gen keeps of an embedded ObjectMeta.
var metadataDescriptions = map[string]string{
	"name":        "Name of the object; for templates, usually left empty.",
	"namespace":   "Namespace of the object; for templates, usually left empty.",
	"labels":      "Map of string keys and values that can be used to organize and categorize objects.",
	"annotations": "Unstructured key value map stored with the object, not used to select it.",
	"finalizers":  "Names of the finalizers that must be removed before the object is deleted.",
}

// describeMetadata fills in every empty description of a "metadata" property and its fields.
func describeMetadata(s *apiextensionsv1.JSONSchemaProps, isMetadata bool) {
	for name, p := range s.Properties {
		if name == "metadata" && p.Description == "" {
			p.Description = "Standard object metadata."
		}
		if isMetadata && p.Description == "" {
			p.Description = metadataDescriptions[name]
		}
		describeMetadata(&p, name == "metadata")
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		describeMetadata(s.Items.Schema, false)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		describeMetadata(s.AdditionalProperties.Schema, false)
	}
}

// trimAt walks path from s and shortens everything below where it ends. Properties hold values,
// not pointers, so each step writes its modified child back into the parent.
func trimAt(s *apiextensionsv1.JSONSchemaProps, path []string) bool {
	if len(path) == 0 {
		shortenBelow(s)
		return true
	}
	switch step := path[0]; step {
	case "[]":
		return s.Items != nil && s.Items.Schema != nil && trimAt(s.Items.Schema, path[1:])
	case "{}":
		return s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil &&
			trimAt(s.AdditionalProperties.Schema, path[1:])
	default:
		child, ok := s.Properties[step]
		if !ok || !trimAt(&child, path[1:]) {
			return false
		}
		s.Properties[step] = child
		return true
	}
}

// shortenBelow shortens the descriptions of every node under s, leaving s's own (ours) whole.
func shortenBelow(s *apiextensionsv1.JSONSchemaProps) {
	for name, p := range s.Properties {
		shorten(&p)
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		shorten(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		shorten(s.AdditionalProperties.Schema)
	}
}

func shorten(s *apiextensionsv1.JSONSchemaProps) {
	s.Description = firstSentence(s.Description)
	shortenBelow(s)
}

// sentenceEnd is a full stop followed by white space, unless it ends a common abbreviation.
var sentenceEnd = regexp.MustCompile(`\.\s`)

func firstSentence(d string) string {
	offset := 0
	for {
		loc := sentenceEnd.FindStringIndex(d[offset:])
		if loc == nil {
			return strings.TrimSpace(d)
		}
		end := offset + loc[0] + 1
		head := d[:end]
		if strings.HasSuffix(head, "e.g.") || strings.HasSuffix(head, "i.e.") || strings.HasSuffix(head, "etc.") {
			offset = end
			continue
		}
		return strings.Join(strings.Fields(head), " ")
	}
}
