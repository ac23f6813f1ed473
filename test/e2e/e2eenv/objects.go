package e2eenv

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// Client is the part of a typed client of one kind in one namespace (as
// Apps.AppsV1alpha1().TApps(ns) returns) that Create, Get and Update use.
type Client[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Create creates obj, failing the test if the API server refuses it.
func Create[T any](t testing.TB, ctx context.Context, c Client[T], obj T) T {
	t.Helper()
	got, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Get reads the named object, failing the test if it cannot.
func Get[T any](t testing.TB, ctx context.Context, c Client[T], name string) T {
	t.Helper()
	got, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Update applies mutate to the current object, retrying on conflicts.
func Update[T any](t testing.TB, ctx context.Context, c Client[T], name string, mutate func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(obj)
		_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
