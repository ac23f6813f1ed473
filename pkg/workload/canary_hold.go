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
	// Role is "stable" (spec.stableRef), "canary" (spec.canary.name) or "target"
	// (spec.targetRef).
	Role string
}

// CanaryHolding finds the Canary of the namespace that names Deployment name as its stable or
// canary Deployment, or that targets the workload of kind and name (nil when none does, or
// when Canaries are not served here).
func CanaryHolding(ctx context.Context, client dynamic.Interface, namespace, kind, name string) (*Holder, error) {
	list, err := client.Resource(Canary.Resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil // no Canaries here, or not for this user to see: nothing to go through
	}
	if err != nil {
		return nil, fmt.Errorf("looking for a Canary that releases %s %s: %w", kind, name, err)
	}
	for i := range list.Items {
		var c v1alpha1.Canary
		if err := fromUnstructured(&list.Items[i], &c); err != nil {
			continue
		}
		if t := c.Spec.TargetRef; t != nil {
			if t.Kind == kind && t.Name == name {
				return &Holder{Canary: c.Name, Role: "target"}, nil
			}
			continue
		}
		if kind != Deployment.Name {
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
	return refuseHeld(ctx, client, namespace, ref, Deployment, func(h *Holder) error {
		return fmt.Errorf("%s is the %s Deployment of canary/%s: %s it would roll every pod without the Canary's steps; release through the Canary instead (kubectl workload set image canary/%s …, abort, retry)",
			ref, h.Role, h.Canary, verb, h.Canary)
	})
}

// RefuseHeldPartition refuses setting the partition of a workload a Canary releases in place
// (a StatefulSet, TApp or UnitedDeployment): the agent owns that partition (it holds it, then lowers it step by step) and would set
// it back. It names the verbs that move the release instead.
func RefuseHeldPartition(ctx context.Context, client dynamic.Interface, namespace string, ref Ref) error {
	if ref.Kind.Name == Canary.Name {
		return nil
	}
	return refuseHeld(ctx, client, namespace, ref, ref.Kind, func(h *Holder) error {
		return fmt.Errorf("%s is released in place by canary/%s, which sets its partition step by step: move the release with kubectl workload promote canary/%s (--full for every step) or abort canary/%s",
			ref, h.Canary, h.Canary, h.Canary)
	})
}

// refuseHeld returns refusal's error when ref is of kind and a Canary holds it.
func refuseHeld(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, kind Kind, refusal func(*Holder) error) error {
	if ref.Kind.Name != kind.Name {
		return nil
	}
	h, err := CanaryHolding(ctx, client, namespace, ref.Kind.Name, ref.Name)
	if err != nil || h == nil {
		return err
	}
	return refusal(h)
}
