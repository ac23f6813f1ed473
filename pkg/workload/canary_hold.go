package workload

import (
	"context"
	"fmt"
	"strings"

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
	// Target names the Deployment a Canary releases through its temporary canary Deployment,
	// when Role is "canary" of such a Canary.
	Target string
	// Step is where the Canary's release stands, such as "Paused at step 2 of 3" ("" before
	// the agent reported any).
	Step string
}

// canaryPaired is a kind a Canary also names as its stable or canary workload (spec.stableRef,
// spec.canary) and holds paused when it targets it: a Deployment.
type canaryPaired interface{ canaryPaired() }

// CanaryHolding finds the Canary of the namespace that names ref as its stable or canary
// workload, or that targets it (nil when none does, when ref is of a kind no Canary releases, or
// when Canaries are not served here).
func CanaryHolding(ctx context.Context, client dynamic.Interface, namespace string, ref Ref) (*Holder, error) {
	if _, ok := ref.Kind.helper.(canaryTarget); !ok {
		return nil, nil
	}
	_, paired := ref.Kind.helper.(canaryPaired)
	list, err := client.Resource(Canary.Resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return nil, nil // no Canaries here, or not for this user to see: nothing to go through
	}
	if err != nil {
		return nil, fmt.Errorf("looking for a Canary that releases %s %s: %w", ref.Kind.Name, ref.Name, err)
	}
	for i := range list.Items {
		var c v1alpha1.Canary
		if err := fromUnstructured(&list.Items[i], &c); err != nil {
			continue
		}
		if h := holding(&c, ref, paired); h != nil {
			return h, nil
		}
	}
	return nil, nil
}

// holding is what Canary c makes of ref (paired: of a kind a Canary also scales), nil when it
// does not name it.
func holding(c *v1alpha1.Canary, ref Ref, paired bool) *Holder {
	if t := c.Spec.TargetRef; t != nil {
		switch {
		case t.Kind == ref.Kind.Name && t.Name == ref.Name:
			return &Holder{Canary: c.Name, Role: "target", Step: canaryAt(c)}
		case t.Kind == ref.Kind.Name && paired && ref.Name == v1alpha1.TemporaryCanaryName(c.Name):
			return &Holder{Canary: c.Name, Role: "canary", Target: t.Name, Step: canaryAt(c)}
		}
		return nil
	}
	if !paired {
		return nil
	}
	switch ref.Name {
	case c.Spec.StableRef.Name:
		return &Holder{Canary: c.Name, Role: "stable", Step: canaryAt(c)}
	case c.Spec.Canary.Name:
		return &Holder{Canary: c.Name, Role: "canary", Step: canaryAt(c)}
	}
	return nil
}

// canaryAt is Holder.Step: the Canary's phase and its current step (or batch).
func canaryAt(c *v1alpha1.Canary) string {
	st := c.Status
	if st.CurrentBatch < 1 || len(st.Batches) == 0 {
		return string(st.Phase)
	}
	return strings.TrimSpace(fmt.Sprintf("%s at %s %d of %d", st.Phase, stepWord(c), st.CurrentBatch, len(st.Batches)))
}

// HeldTarget refuses a change of the pod template of a Deployment a Canary releases as its
// stable or canary Deployment: the Deployment would roll every pod with its own strategy, past
// the Canary's steps, pauses and checks (and a rollback would undo it); the error names the way
// that goes through the Canary. It returns the Canary that targets ref when one does (a workload
// released in place, whose template change is its next release), with one look-up of the
// Canaries.
func HeldTarget(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, verb string) (*Holder, error) {
	h, err := CanaryHolding(ctx, client, namespace, ref)
	if err != nil || h == nil || h.Role == "target" {
		return h, err
	}
	if h.Target != "" {
		return nil, fmt.Errorf("%s is the temporary canary Deployment of canary/%s, which releases deploy/%s: %s it would roll its pods without the Canary's steps; change deploy/%s instead (kubectl workload set image deploy/%s …), which the Canary releases from step 1",
			ref, h.Canary, h.Target, verb, h.Target, h.Target)
	}
	return nil, fmt.Errorf("%s is the %s Deployment of canary/%s: %s it would roll every pod without the Canary's steps; release through the Canary instead (kubectl workload set image canary/%s …, abort, retry)",
		ref, h.Role, h.Canary, verb, h.Canary)
}

// RefuseHeldPartition refuses setting the partition of a workload a Canary releases in place
// (a StatefulSet, TApp or UnitedDeployment): the agent owns that partition (it holds it, then lowers it step by step) and would set
// it back. It names the verbs that move the release instead.
func RefuseHeldPartition(ctx context.Context, client dynamic.Interface, namespace string, ref Ref) error {
	h, err := CanaryHolding(ctx, client, namespace, ref)
	if err != nil || h == nil {
		return err
	}
	return fmt.Errorf("%s is released in place by canary/%s, which sets its partition step by step: move the release with kubectl workload promote canary/%s (--full for every step) or abort canary/%s",
		ref, h.Canary, h.Canary, h.Canary)
}

// UndoHolder is, for a kind a Canary holds paused when it targets it (a Deployment), the Canary
// that targets ref: the template undo writes back is then its next release. A Deployment a
// Canary scales as its stable or canary one is refused, as HeldTarget does.
func UndoHolder(ctx context.Context, client dynamic.Interface, namespace string, ref Ref) (*Holder, error) {
	if _, ok := ref.Kind.helper.(canaryPaired); !ok {
		return nil, nil
	}
	return HeldTarget(ctx, client, namespace, ref, "undo of")
}
