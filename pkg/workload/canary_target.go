package workload

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A Canary with spec.targetRef releases a workload in place: its pod template is the
// workload's, changed there (kubectl workload set image sts/x, kubectl set image ds/x), and its
// progress is the workload's partition and revisions (status.target).

// canaryTarget is a kind a Canary can name in spec.targetRef: released in place through its
// partition (StatefulSet, TApp, UnitedDeployment) or its update strategy (DaemonSet), or, for a
// Deployment, held paused and released on a temporary canary Deployment.
type canaryTarget interface {
	// targetNodes are the tree's lines of the target c releases.
	targetNodes(t *treeReader, c *v1alpha1.Canary) ([]*Node, error)
	// targetCounts is the status line's counts of c, whose status.target is observed.
	targetCounts(c *v1alpha1.Canary) string
}

// targetCounts is the status line's counts of a Canary with a target.
func targetCounts(c *v1alpha1.Canary) string {
	ref := c.Spec.TargetRef
	k, _ := targetKind(ref.Kind)
	ct, ok := k.helper.(canaryTarget)
	if c.Status.Target == nil || !ok {
		return fmt.Sprintf("%s/%s not observed yet", kindShort(ref.Kind), ref.Name)
	}
	return ct.targetCounts(c)
}

// partitionTarget is the targetCounts of the kinds a Canary holds at their partition.
type partitionTarget struct{}

func (partitionTarget) targetCounts(c *v1alpha1.Canary) string {
	p := c.Status.Target.Partition
	return inPlaceCounts(c, fmt.Sprintf("partition %d", p), fmt.Sprintf("held at partition %d", p))
}

// inPlaceCounts are the counts of a target released in place, held saying how its old pods are
// kept during a release and hold how it is held between releases.
func inPlaceCounts(c *v1alpha1.Canary, held, hold string) string {
	t, ref := c.Status.Target, c.Spec.TargetRef
	if t.UpdateRevision == t.StableRevision {
		return fmt.Sprintf("%s/%s at revision %s, %d/%d available, %s",
			kindShort(ref.Kind), ref.Name, t.StableRevision, t.AvailableReplicas, c.Total(), hold)
	}
	return fmt.Sprintf("%s/%s: %d/%d pods on revision %s (from %s), %d available, %s",
		kindShort(ref.Kind), ref.Name, t.UpdatedReplicas, c.Total(), t.UpdateRevision, t.StableRevision, t.AvailableReplicas, held)
}

// kindShort is the short name of a target kind.
func kindShort(kind string) string {
	if k, ok := targetKind(kind); ok {
		return k.Short
	}
	return kind
}

func targetKind(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// targetNodes are the tree's lines of a Canary's target, with its revisions and pods.
func (t *treeReader) targetNodes(c *v1alpha1.Canary) ([]*Node, error) {
	ref := c.Spec.TargetRef
	k, _ := targetKind(ref.Kind)
	ct, ok := k.helper.(canaryTarget)
	if !ok {
		return []*Node{{Name: ref.Kind + "/" + ref.Name, Status: "Unknown", Info: "target of a kind this plugin does not know"}}, nil
	}
	return ct.targetNodes(t, c)
}

// targetLine names a target's subtree n (of kind k) and says what the Canary does with it.
func targetLine(k Kind, c *v1alpha1.Canary, n *Node, err error) ([]*Node, error) {
	if n == nil || err != nil {
		return nil, err
	}
	n.Name = k.Short + "/" + c.Spec.TargetRef.Name
	n.Info = "target: " + targetCounts(c)
	return []*Node{n}, nil
}

// targetStatefulSet is a target StatefulSet's subtree (typed: native objects are read so).
func (t *treeReader) targetStatefulSet(name string) (*Node, error) {
	s, err := t.kube.AppsV1().StatefulSets(t.ns).Get(t.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Node{Name: StatefulSet.Short + "/" + name, Status: "NotFound", Info: "target"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading its target StatefulSet %q: %w", name, err)
	}
	n, err := t.statefulSet(s, s, true)
	if err != nil {
		return nil, fmt.Errorf("target StatefulSet %q: %w", name, err)
	}
	return n, nil
}

// targetObject is the subtree of a target of one of our kinds, read through the dynamic client.
func (t *treeReader) targetObject(k Kind, name string) (*Node, error) {
	obj, err := t.client.Resource(k.Resource).Namespace(t.ns).Get(t.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Node{Name: k.Short + "/" + name, Status: "NotFound", Info: "target"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading its target %s %q: %w", k.Name, name, err)
	}
	n, err := k.helper.tree(t, obj)
	if err != nil {
		return nil, fmt.Errorf("target %s %q: %w", k.Name, name, err)
	}
	return n, nil
}

// refuseTargetTemplate refuses a pod template change through a Canary with a target: the
// template is the target's.
func refuseTargetTemplate(ref Ref, c *v1alpha1.Canary) error {
	t := c.Spec.TargetRef
	return fmt.Errorf("%s releases %s/%s in place and has no template of its own: change the image on %s/%s (kubectl workload set image %s/%s …) and %s releases it through its steps",
		ref, kindShort(t.Kind), t.Name, kindShort(t.Kind), t.Name, kindShort(t.Kind), t.Name, ref)
}

// targetDaemonSet is a target DaemonSet's subtree, its revisions named by the Canary's status
// (a DaemonSet's own status names none).
func (t *treeReader) targetDaemonSet(c *v1alpha1.Canary) (*Node, error) {
	name := c.Spec.TargetRef.Name
	d, err := t.kube.AppsV1().DaemonSets(t.ns).Get(t.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Node{Name: DaemonSet.Short + "/" + name, Status: "NotFound", Info: "target"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading its target DaemonSet %q: %w", name, err)
	}
	var update, stable string
	if st := c.Status.Target; st != nil {
		update, stable = st.UpdateRevision, st.StableRevision
	}
	sel, err := selectorOf(d.Spec.Selector, nil)
	if err != nil {
		return nil, fmt.Errorf("target DaemonSet %q: %w", name, err)
	}
	n, err := t.daemonSet(d, d, sel, update, stable, "stable")
	if err != nil {
		return nil, fmt.Errorf("target DaemonSet %q: %w", name, err)
	}
	return n, nil
}
