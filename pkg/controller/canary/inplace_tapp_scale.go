package canary

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/tapp"
)

// A TApp scaled up in the middle of a release makes its new instances, the highest ids, above
// the partition: from spec.template, the update revision. As for a StatefulSet
// (inplace_statefulset_scale.go), the partition the next sync moves up for the step's share of
// the new total takes no instance back, so converge deletes the instances below it that run
// spec.template, and the TApp controller makes each again from its current revision, as it makes
// every instance below the partition (pkg/controller/tapp, held.go; docs/canary-targets.md, "A
// StatefulSet or TApp scaled mid-release").

// converge deletes the TApp's pods below instance id keep (the partition the plan leaves) that
// run spec.template. Its pods are listed from the API server only when its status counts more
// instances on spec.template than the partition leaves it, never in a release whose total stays
// put.
func (t tappTarget) converge(ctx context.Context, c *Controller, keep int32, _ bool) (string, error) {
	a := t.TApp
	replicas := v1alpha1.ReplicasOrDefault(a.Spec.Replicas)
	if a.Status.UpdateRevision == a.Status.CurrentRevision || a.Status.UpdatedReplicas <= max(0, replicas-keep) {
		return "", nil
	}
	pods, err := c.ownedPods(ctx, a, labels.SelectorFromSet(labels.Set{v1alpha1.LabelTAppName: a.Name}).String())
	if err != nil {
		return "", fmt.Errorf("listing the pods of TApp %q: %w", a.Name, err)
	}
	names, err := c.deletePods(ctx, tappDeletions(a, pods, keep))
	if err != nil {
		return "", fmt.Errorf("%w (of TApp %q, revision %s, below partition %d)", err, a.Name, a.Status.UpdateRevision, keep)
	}
	if names == nil {
		return "", nil
	}
	return fmt.Sprintf("deleted pods %s of TApp %q, on revision %s below partition %d since it was scaled up, for its controller to make again on revision %s",
		strings.Join(names, ", "), a.Name, a.Status.UpdateRevision, keep, a.Status.CurrentRevision), nil
}

// tappDeletions returns the pods of a below instance id keep on spec.template (the TApp
// controller labels each pod with its template's hash) to delete now (belowPartition).
func tappDeletions(a *v1alpha1.TApp, pods []*corev1.Pod, keep int32) []*corev1.Pod {
	hash := tapp.TemplateHash(&a.Spec.Template)
	return belowPartition(pods, keep, v1alpha1.ReplicasOrDefault(a.Spec.Replicas), instanceID,
		func(p *corev1.Pod) bool { return p.Labels[v1alpha1.LabelTemplateHash] == hash })
}

// instanceID is the instance id of a TApp pod, from its label.
func instanceID(p *corev1.Pod) (int32, bool) {
	n, err := strconv.ParseInt(p.Labels[v1alpha1.LabelInstanceID], 10, 32)
	return int32(n), err == nil && n >= 0
}
