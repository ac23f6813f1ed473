package workload

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// Get reads the object a Ref names and turns API errors into one line that names the object.
func Get(ctx context.Context, client dynamic.Interface, namespace string, ref Ref) (*unstructured.Unstructured, error) {
	obj, err := client.Resource(ref.Kind.Resource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s not found in namespace %q", ref, namespace)
	case err != nil:
		return nil, fmt.Errorf("reading %s in namespace %q: %w", ref, namespace, err)
	}
	return obj, nil
}
