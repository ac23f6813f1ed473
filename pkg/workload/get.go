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
	where := fmt.Sprintf(" in namespace %q", namespace)
	if ref.Kind.ClusterScoped {
		where = ""
	}
	obj, err := In(client, ref.Kind, namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s not found%s", ref, where)
	case err != nil:
		return nil, fmt.Errorf("reading %s%s: %w", ref, where, err)
	}
	return obj, nil
}

// In is the part of client that serves k's objects of namespace (every object of a
// cluster-scoped kind).
func In(client dynamic.Interface, k Kind, namespace string) dynamic.ResourceInterface {
	if k.ClusterScoped {
		return client.Resource(k.Resource)
	}
	return client.Resource(k.Resource).Namespace(namespace)
}
