package workload

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A Canary with spec.targetRef releases a workload in place: its pod template is the
// workload's, changed there (kubectl workload set image sts/x, kubectl set image ds/x), and its
// progress is the workload's partition and revisions (status.target).

// targetCounts is the status line's counts of a Canary with a target.
func targetCounts(c *v1alpha1.Canary) string {
	t := c.Status.Target
	ref := c.Spec.TargetRef
	if t == nil {
		return fmt.Sprintf("%s/%s not observed yet", kindShort(ref.Kind), ref.Name)
	}
	if ref.Kind == Deployment.Name {
		return deploymentTargetCounts(c) // canary_deployment_target.go
	}
	// A DaemonSet has no partition: the agent keeps that many pods on the stable revision.
	held, hold := fmt.Sprintf("partition %d", t.Partition), fmt.Sprintf("held at partition %d", t.Partition)
	if ref.Kind == daemonSet {
		held = fmt.Sprintf("%d kept on the stable revision", t.Partition)
		hold = "held with updateStrategy OnDelete"
	}
	if t.UpdateRevision == t.StableRevision {
		return fmt.Sprintf("%s/%s at revision %s, %d/%d available, %s",
			kindShort(ref.Kind), ref.Name, t.StableRevision, t.AvailableReplicas, c.Spec.Replicas, hold)
	}
	return fmt.Sprintf("%s/%s: %d/%d pods on revision %s (from %s), %d available, %s",
		kindShort(ref.Kind), ref.Name, t.UpdatedReplicas, c.Spec.Replicas, t.UpdateRevision, t.StableRevision, t.AvailableReplicas, held)
}

// kindShort is the short name of a target kind.
func kindShort(kind string) string {
	if kind == daemonSet {
		return "ds"
	}
	if k, ok := targetKind(kind); ok {
		return k.Short
	}
	return kind
}

// daemonSet is the kind of a DaemonSet target: not a kind the plugin lists or changes itself,
// only shown under the Canary that releases it.
const daemonSet = "DaemonSet"

func targetKind(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// targetNode is the tree's line of a Canary's target, with its revisions and pods.
func (t *treeReader) targetNode(c *v1alpha1.Canary) (*Node, error) {
	ref := c.Spec.TargetRef
	if ref.Kind == daemonSet {
		return t.daemonSetTarget(c)
	}
	k, ok := targetKind(ref.Kind)
	if !ok || k.helper == nil {
		return &Node{Name: ref.Kind + "/" + ref.Name, Status: "Unknown", Info: "target of a kind this plugin does not know"}, nil
	}
	var n *Node
	var err error
	if k.Name == StatefulSet.Name {
		n, err = t.targetStatefulSet(ref.Name)
	} else {
		n, err = t.targetObject(k, ref.Name)
	}
	if n == nil || err != nil {
		return n, err
	}
	n.Name = k.Short + "/" + ref.Name
	n.Info = "target: " + targetCounts(c)
	return n, nil
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

// daemonSetTarget is the tree's line of a DaemonSet target: its pods by revision (the hash the
// DaemonSet controller puts on them), the update revision first.
func (t *treeReader) daemonSetTarget(c *v1alpha1.Canary) (*Node, error) {
	ref := c.Spec.TargetRef
	d, err := t.kube.AppsV1().DaemonSets(t.ns).Get(t.ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Node{Name: "ds/" + ref.Name, Status: "NotFound", Info: "target"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading its target DaemonSet %q: %w", ref.Name, err)
	}
	n := &Node{Object: d, Name: "ds/" + d.Name, Created: d.CreationTimestamp.Time,
		Ready:  fmt.Sprintf("%d/%d", d.Status.NumberReady, d.Status.DesiredNumberScheduled),
		Status: string(d.Spec.UpdateStrategy.Type), Info: "target: " + targetCounts(c)}
	sel, err := selectorOf(d.Spec.Selector, nil)
	if err != nil {
		return nil, fmt.Errorf("target DaemonSet %q: %w", d.Name, err)
	}
	pods, err := t.listPods(sel)
	if err != nil {
		return nil, fmt.Errorf("target DaemonSet %q: %w", d.Name, err)
	}
	byRev, revs := map[string][]*Node{}, []string{}
	for _, p := range pods {
		if !controlledBy(p, d.UID) {
			continue
		}
		rev := d.Name + "-" + p.Labels[appsv1.ControllerRevisionHashLabelKey]
		if byRev[rev] == nil {
			revs = append(revs, rev)
		}
		byRev[rev] = append(byRev[rev], podNode(p))
	}
	var update, stable string
	if st := c.Status.Target; st != nil {
		update, stable = st.UpdateRevision, st.StableRevision
	}
	rank := func(r string) int {
		switch r {
		case update:
			return 0
		case stable:
			return 1
		}
		return 2
	}
	sort.SliceStable(revs, func(i, j int) bool { return rank(revs[i]) < rank(revs[j]) })
	for _, r := range revs {
		rn := &Node{Name: "revision " + r, Children: byRev[r]}
		switch {
		case r == update && r == stable:
			rn.Info = "stable and update revision"
		case r == update:
			rn.Info = "update revision"
		case r == stable:
			rn.Info = "stable revision"
		}
		rn.Info = joinInfo(rn.Info, plural(int32(len(byRev[r])), "pod", "pods"))
		n.Children = append(n.Children, rn)
	}
	return n, nil
}
