package workload

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Holder is the Canary that names a Deployment, and as what.
type Holder struct {
	Canary string
	// Role is "stable" (spec.stableRef) or "canary" (spec.canary.name).
	Role string
}

// CanaryHolding finds the Canary of the namespace that names Deployment name as its stable or
// canary Deployment (nil when none does, or when Canaries are not served here).
func CanaryHolding(ctx context.Context, client dynamic.Interface, namespace, name string) (*Holder, error) {
	list, err := client.Resource(Canary.Resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil // no Canaries here, or not for this user to see: nothing to go through
	}
	if err != nil {
		return nil, fmt.Errorf("looking for a Canary that releases deploy/%s: %w", name, err)
	}
	for i := range list.Items {
		var c v1alpha1.Canary
		if err := fromUnstructured(&list.Items[i], &c); err != nil {
			continue
		}
		switch name {
		case c.Spec.StableRef.Name:
			return &Holder{Canary: c.Name, Role: "stable"}, nil
		case c.Spec.Canary.Name:
			return &Holder{Canary: c.Name, Role: "canary"}, nil
		}
	}
	return nil, nil
}

// RefuseHeldDeployment refuses a change of the pod template of a Deployment a Canary
// releases: the Deployment would roll every pod with its own strategy, past the Canary's
// steps, pauses and checks (and a rollback would undo it). It names the way that goes
// through the Canary.
func RefuseHeldDeployment(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, verb string) error {
	if ref.Kind.Name != Deployment.Name {
		return nil
	}
	h, err := CanaryHolding(ctx, client, namespace, ref.Name)
	if err != nil || h == nil {
		return err
	}
	return fmt.Errorf("%s is the %s Deployment of canary/%s: %s it would roll every pod without the Canary's steps; release through the Canary instead (kubectl workload set image canary/%s …, abort, retry)",
		ref, h.Role, h.Canary, verb, h.Canary)
}
