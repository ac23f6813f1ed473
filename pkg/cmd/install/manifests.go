// Package install implements `kubectl workload install` and `uninstall`: the embedded CRDs, RBAC
// and agent manifests, applied with server-side apply or deleted.
package install

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-workload/kubectl-workload/config"
	"github.com/kubectl-workload/kubectl-workload/pkg/version"
)

// FieldManager is the server-side apply field manager of install.
const FieldManager = "kubectl-workload"

// DefaultImage is the agent image install deploys: the one released with this plugin.
func DefaultImage() string { return config.AgentImage + ":" + version.Version }

// resource says where the API server serves a kind of the manifests.
type resource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// resources maps every kind the manifests hold to its resource; a test checks it covers them.
var resources = map[schema.GroupVersionKind]resource{
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}: {schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, false},
	{Version: "v1", Kind: "Namespace"}:                                               {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	{Version: "v1", Kind: "ServiceAccount"}:                                          {schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	{Version: "v1", Kind: "Service"}:                                                 {schema.GroupVersionResource{Version: "v1", Resource: "services"}, true},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:         {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, false},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}:  {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, false},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:                {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, true},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}:         {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, true},
	{Group: "apps", Version: "v1", Kind: "Deployment"}:                               {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
}

func resourceOf(obj *unstructured.Unstructured) (resource, error) {
	r, ok := resources[obj.GroupVersionKind()]
	if !ok {
		return resource{}, fmt.Errorf("%s %q: the plugin does not know where this kind is served", obj.GroupVersionKind(), obj.GetName())
	}
	return r, nil
}

// displayName names an object as kubectl apply does: "deployment.apps/workload-agent".
func displayName(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	kind := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	return kind + "/" + obj.GetName()
}

// embedded are the manifests as decoded once from the plugin binary.
var embedded struct {
	once       sync.Once
	crds, rest []*unstructured.Unstructured
	err        error
}

func loadEmbedded() ([]*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	embedded.once.Do(func() {
		crds, err := config.CRDs()
		if err != nil {
			embedded.err = err
			return
		}
		for _, crd := range crds {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
			if err != nil {
				embedded.err = err
				return
			}
			u := &unstructured.Unstructured{Object: m}
			u.SetAPIVersion("apiextensions.k8s.io/v1")
			u.SetKind("CustomResourceDefinition")
			// A CRD read from YAML carries an empty status; the API server owns it.
			unstructured.RemoveNestedField(u.Object, "status")
			unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
			embedded.crds = append(embedded.crds, u)
		}
		embedded.rest, embedded.err = config.AgentManifests()
	})
	return embedded.crds, embedded.rest, embedded.err
}

// Manifests returns what install applies, in order: the CRDs, then (unless crdsOnly) the agent's
// namespace, RBAC, Service and Deployment, its image set to image. The objects are the caller's.
func Manifests(image string, crdsOnly bool) ([]*unstructured.Unstructured, error) {
	crds, agent, err := loadEmbedded()
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, crd := range crds {
		objs = append(objs, crd.DeepCopy())
	}
	if crdsOnly {
		return objs, nil
	}
	for _, obj := range agent {
		obj = obj.DeepCopy()
		if obj.GetKind() == "Deployment" {
			if err := setImage(obj, image); err != nil {
				return nil, err
			}
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// setImage sets the image of the agent's container.
func setImage(deploy *unstructured.Unstructured, image string) error {
	containers, _, err := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return err
	}
	for i, c := range containers {
		m, ok := c.(map[string]interface{})
		if ok && m["name"] == "agent" {
			m["image"] = image
			containers[i] = m
			return unstructured.SetNestedSlice(deploy.Object, containers, "spec", "template", "spec", "containers")
		}
	}
	return fmt.Errorf("deployment %s has no container named agent", deploy.GetName())
}
