package workload

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A Canary with spec.targetRef releases a StatefulSet in place: its pod template is the
// StatefulSet's, changed there (kubectl workload set image sts/x), and its progress is the
// StatefulSet's partition and revisions (status.target).

// targetCounts is the status line's counts of a Canary with a target.
func targetCounts(c *v1alpha1.Canary) string {
	t := c.Status.Target
	ref := c.Spec.TargetRef
	if t == nil {
		return fmt.Sprintf("%s/%s not observed yet", kindShort(ref.Kind), ref.Name)
	}
	if t.UpdateRevision == t.StableRevision {
		return fmt.Sprintf("%s/%s at revision %s, %d/%d available, held at partition %d",
			kindShort(ref.Kind), ref.Name, t.StableRevision, t.AvailableReplicas, c.Spec.Replicas, t.Partition)
	}
	return fmt.Sprintf("%s/%s: %d/%d pods on revision %s (from %s), %d available, partition %d",
		kindShort(ref.Kind), ref.Name, t.UpdatedReplicas, c.Spec.Replicas, t.UpdateRevision, t.StableRevision, t.AvailableReplicas, t.Partition)
}

// kindShort is the short name of a target kind.
func kindShort(kind string) string {
	if kind == StatefulSet.Name {
		return StatefulSet.Short
	}
	return kind
}

// targetNode is the tree's line of a Canary's target, with its revisions and pods.
func (t *treeReader) targetNode(c *v1alpha1.Canary) (*Node, error) {
	ref := c.Spec.TargetRef
	s, err := t.kube.AppsV1().StatefulSets(t.ns).Get(t.ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Node{Name: StatefulSet.Short + "/" + ref.Name, Status: "NotFound", Info: "target"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading its target StatefulSet %q: %w", ref.Name, err)
	}
	n, err := t.statefulSet(s, s, true)
	if err != nil {
		return nil, fmt.Errorf("target StatefulSet %q: %w", ref.Name, err)
	}
	n.Info = "target: " + targetCounts(c)
	return n, nil
}

// refuseTargetTemplate refuses a pod template change through a Canary with a target: the
// template is the target's.
func refuseTargetTemplate(ref Ref, c *v1alpha1.Canary) error {
	t := c.Spec.TargetRef
	return fmt.Errorf("%s releases %s/%s in place and has no template of its own: change the image on %s/%s (kubectl workload set image %s/%s …) and %s releases it through its steps",
		ref, kindShort(t.Kind), t.Name, kindShort(t.Kind), t.Name, kindShort(t.Kind), t.Name, ref)
}
