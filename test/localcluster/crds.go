package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

// InstallCRDs creates or updates every CustomResourceDefinition found in the
// manifests directly in dir and waits until each is Established, so that
// clients can use the new types as soon as it returns. Other objects (a
// kustomization, say) are ignored.
func (c *Cluster) InstallCRDs(ctx context.Context, dir string) error {
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml", "*.json"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		files = append(files, m...)
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("CRD directory: %w", err)
	}
	slices.Sort(files)

	client, err := apiextensions.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	var names []string
	for _, file := range files {
		objs, err := ReadManifests(file)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if obj.GetKind() != "CustomResourceDefinition" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				var old *apiextensionsv1.CustomResourceDefinition
				if old, err = crds.Get(ctx, crd.Name, metav1.GetOptions{}); err == nil {
					crd.ResourceVersion = old.ResourceVersion
					_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
				}
			}
			if err != nil {
				return fmt.Errorf("installing CRD %s from %s: %w", crd.Name, file, err)
			}
			names = append(names, crd.Name)
		}
	}
	c.opts.Logf("localcluster: installed %d CRDs from %s", len(names), dir)
	for _, name := range names {
		if err := c.waitFor(ctx, "CRD "+name+" Established", func(ctx context.Context) (bool, error) {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return err
		}
	}
	return nil
}
