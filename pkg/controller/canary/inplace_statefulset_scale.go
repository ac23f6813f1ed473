package canary

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A StatefulSet scaled up in the middle of a release (its autoscaler, with spec.replicas left
// out) makes each new ordinal from the template of its side of the partition as it stands then:
// the new ordinals are the highest, above the partition, so on the update revision. The next
// sync moves the partition for the step's share of the new total, but a partition never takes a
// pod back: the pods below it left on the update revision (the new ones made before it moved,
// and the step's canary ordinals of the smaller total) would keep more pods on the new revision
// than the step asks until the next step. converge deletes them, and the StatefulSet controller
// makes each again on its current (stable) revision, as it makes every ordinal below the
// partition (docs/canary-targets.md, "A StatefulSet or TApp scaled mid-release").

// converge deletes the StatefulSet's pods below ordinal keep (the partition the plan leaves)
// that run the update revision. Its pods are listed from the API server only when its status
// counts more pods on the update revision than the partition leaves it, which is never the case
// in a release whose total stays put.
func (t statefulSetTarget) converge(ctx context.Context, c *Controller, keep int32, _ bool) (string, error) {
	s := t.StatefulSet
	if s.Status.UpdateRevision == s.Status.CurrentRevision || s.Status.UpdatedReplicas <= max(0, stsReplicas(s)-keep) {
		return "", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
	if err != nil {
		return "", fmt.Errorf("StatefulSet %q has an invalid selector: %w", s.Name, err)
	}
	pods, err := c.ownedPods(ctx, s, sel.String())
	if err != nil {
		return "", fmt.Errorf("listing the pods of StatefulSet %q: %w", s.Name, err)
	}
	names, err := c.deletePods(ctx, statefulSetDeletions(s, pods, keep))
	if err != nil {
		return "", fmt.Errorf("%w (of StatefulSet %q, revision %s, below partition %d)", err, s.Name, s.Status.UpdateRevision, keep)
	}
	if names == nil {
		return "", nil
	}
	return fmt.Sprintf("deleted pods %s of StatefulSet %q, on revision %s below partition %d since it was scaled up, for its controller to make again on revision %s",
		strings.Join(names, ", "), s.Name, s.Status.UpdateRevision, keep, s.Status.CurrentRevision), nil
}

// ownedPods lists from the API server the pods of selector that owner controls.
func (c *Controller) ownedPods(ctx context.Context, owner metav1.Object, selector string) ([]*corev1.Pod, error) {
	list, err := c.kubeClient.CoreV1().Pods(owner.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; metav1.IsControlledBy(p, owner) {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// deletePods deletes pods, each with its UID as a precondition (a pod made again since it was
// listed is not touched), and returns their names.
func (c *Controller) deletePods(ctx context.Context, pods []*corev1.Pod) ([]string, error) {
	var names []string
	for _, p := range pods {
		uid := p.UID
		err := c.kubeClient.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return names, fmt.Errorf("deleting pod %q: %w", p.Name, err)
		}
		names = append(names, p.Name)
	}
	return names, nil
}

// statefulSetDeletions returns the pods of s below ordinal keep on its update revision to delete
// now (belowPartition).
func statefulSetDeletions(s *appsv1.StatefulSet, pods []*corev1.Pod, keep int32) []*corev1.Pod {
	return belowPartition(pods, keep, stsReplicas(s),
		func(p *corev1.Pod) (int32, bool) { return ordinal(s, p) },
		func(p *corev1.Pod) bool {
			return p.Labels[appsv1.ControllerRevisionHashLabelKey] == s.Status.UpdateRevision
		})
}

// belowPartition returns the pods below ordinal keep on the update revision (onUpdate) of a
// workload of replicas pods to delete now: every one not ready (deleting it costs no capacity),
// and, while every other pod is there and ready and the workload has no pod of its own to
// update (every one from keep up runs the update revision), one ready one, the highest ordinal
// first: one pod unavailable at a time, the pace of a StatefulSet's own rolling update, which
// never runs alongside.
func belowPartition(pods []*corev1.Pod, keep, replicas int32, ordinalOf func(*corev1.Pod) (int32, bool), onUpdate func(*corev1.Pod) bool) []*corev1.Pod {
	ready := int32(0)
	updating := false
	var extra []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if podReady(p) {
			ready++
		}
		n, ok := ordinalOf(p)
		switch {
		case ok && n < keep && onUpdate(p):
			extra = append(extra, p)
		case ok && n >= keep && !onUpdate(p):
			updating = true
		}
	}
	slices.SortFunc(extra, func(a, b *corev1.Pod) int {
		na, _ := ordinalOf(a)
		nb, _ := ordinalOf(b)
		return cmp.Or(cmp.Compare(b2i(podReady(a)), b2i(podReady(b))), cmp.Compare(nb, na))
	})
	budget := 1 - max(0, replicas-ready)
	if updating {
		budget = 0
	}
	var out []*corev1.Pod
	for _, p := range extra {
		if podReady(p) {
			if budget <= 0 {
				break
			}
			budget--
		}
		out = append(out, p)
	}
	return out
}

// ordinal is the ordinal of a pod of s, from its name (<statefulset>-<ordinal>).
func ordinal(s *appsv1.StatefulSet, p *corev1.Pod) (int32, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(p.Name, s.Name+"-"), 10, 32)
	if err != nil || !strings.HasPrefix(p.Name, s.Name+"-") {
		return 0, false
	}
	return int32(n), true
}

// podReady says whether a pod that is not terminating has its Ready condition true.
func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
