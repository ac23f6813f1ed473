package pluginverbs

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// rolloutCRD is the shape of Argo Rollouts' Rollout CRD that name resolution sees: group
// argoproj.io, kind Rollout, plural rollouts, short name ro, no category (its schema is left
// open: only discovery matters here).
func rolloutCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "rollouts.argoproj.io"},
		"spec": map[string]any{
			"group": "argoproj.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "Rollout", "listKind": "RolloutList", "plural": "rollouts", "singular": "rollout", "shortNames": []any{"ro"}},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
}

// With Argo Rollouts' CRDs installed, its names are refused with one line, as any other type
// that is not a workload: `kubectl workload status rollout/web`, `ro/web` and
// `rollouts.argoproj.io/web` never act on our objects, and `list` lists ours only.
func TestArgoRolloutNamesAreRefused(t *testing.T) {
	e := setup(t)
	if _, err := e.Dyn.Resource(crdGVR).Create(e.Ctx, rolloutCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Dyn.Resource(crdGVR).Delete(e.Ctx, "rollouts.argoproj.io", metav1.DeleteOptions{}) })
	e.Eventually("rollouts.argoproj.io served", func() (bool, string) {
		_, err := e.Dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}).Namespace(e.NS).
			List(e.Ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	web := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	web.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	web.Spec.Template = podTemplate(map[string]string{"app": "web"}, "nginx:1.27")
	if _, err := e.Apps.AppsV1alpha1().TApps(e.NS).Create(e.Ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, typed := range []string{"rollout", "ro", "rollouts.argoproj.io"} {
		e.fails(fmt.Sprintf(`unknown workload type %q`, typed), workload.TApp, "web", "status", typed+"/web")
	}
	e.fails(`unknown workload type "ro"`, workload.TApp, "web", "pause", "ro/web")
	if r := e.ok("web", "list"); strings.Contains(r.Out, "Rollout") {
		t.Errorf("list lists Argo's kinds:\n%s", r.Out)
	}
}
