package config

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed agent/*.yaml
var agentFiles embed.FS

// AgentImage is the image the agent's Deployment names in agent/deployment.yaml, without its tag;
// `kubectl workload install --image` replaces the whole reference.
const AgentImage = "ghcr.io/kubectl-workload/workload-agent"

// AgentNamespace is the namespace the agent runs in.
const AgentNamespace = "workload-system"

// AgentManifests returns the objects of agent/ (namespace, RBAC, Deployment, Service) in the
// order kustomization.yaml lists their files.
func AgentManifests() ([]*unstructured.Unstructured, error) {
	files, err := agentResourceFiles()
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, name := range files {
		data, err := agentFiles.ReadFile(path.Join("agent", name))
		if err != nil {
			return nil, err
		}
		decoded, err := decodeAll(data)
		if err != nil {
			return nil, fmt.Errorf("agent/%s: %w", name, err)
		}
		objs = append(objs, decoded...)
	}
	return objs, nil
}

// agentResourceFiles reads the resources list of agent/kustomization.yaml, and checks that it
// names every manifest of the directory (a file left out would be installed by kustomize users
// and not by the plugin, or the other way round).
func agentResourceFiles() ([]string, error) {
	data, err := agentFiles.ReadFile("agent/kustomization.yaml")
	if err != nil {
		return nil, err
	}
	objs, err := decodeAll(data)
	if err != nil || len(objs) != 1 {
		return nil, fmt.Errorf("agent/kustomization.yaml: %v", err)
	}
	listed, _, err := unstructured.NestedStringSlice(objs[0].Object, "resources")
	if err != nil {
		return nil, fmt.Errorf("agent/kustomization.yaml: resources: %w", err)
	}
	present, err := fs.Glob(agentFiles, "agent/*.yaml")
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range present {
		if name := path.Base(p); name != "kustomization.yaml" {
			want[name] = true
		}
	}
	for _, name := range listed {
		if !want[name] {
			return nil, fmt.Errorf("agent/kustomization.yaml lists %s, which is not a manifest of agent/", name)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		var left []string
		for name := range want {
			left = append(left, name)
		}
		sort.Strings(left)
		return nil, fmt.Errorf("agent/kustomization.yaml does not list %v", left)
	}
	return listed, nil
}

// decodeAll reads every object of a YAML stream, skipping empty documents.
func decodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj.Object) == 0 {
			continue
		}
		out = append(out, obj)
	}
}
