package workload

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// DaemonSet is the native DaemonSet: status, tree, set image and history. It has neither a pause
// switch nor a partition: a Canary (spec.targetRef) releases it step by step instead.
var DaemonSet = Kind{Name: "DaemonSet", Short: "ds",
	Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
	aliases:  []string{"daemonset", "daemonsets", "daemonsets.apps"}, helper: daemonSetKind{}}

// daemonSetKind's history is the ControllerRevisions the DaemonSet controller records.
type daemonSetKind struct{ podTemplateHistory }

func (daemonSetKind) revisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	return selectedRevisions(ctx, client, namespace, ref, obj)
}

// targetNodes is the DaemonSet a Canary releases, its revisions named by the Canary's status.
func (daemonSetKind) targetNodes(t *treeReader, c *v1alpha1.Canary) ([]*Node, error) {
	n, err := t.targetDaemonSet(c)
	return targetLine(DaemonSet, c, n, err)
}

// targetCounts: a DaemonSet has no partition; the agent keeps that many pods on the stable
// revision.
func (daemonSetKind) targetCounts(c *v1alpha1.Canary) string {
	return inPlaceCounts(c, fmt.Sprintf("%d kept on the stable revision", c.Status.Target.Partition), "held with updateStrategy OnDelete")
}

// statusRevision is none: a DaemonSet's status names no revision.
func (daemonSetKind) statusRevision(*unstructured.Unstructured, []Revision) string { return "" }

func (daemonSetKind) Status(obj *unstructured.Unstructured) (RolloutStatus, error) {
	return statusOf(obj, daemonSetRollout)
}

// tree names the update revision from the DaemonSet's ControllerRevisions: its status names
// none, unlike a StatefulSet's.
func (daemonSetKind) tree(t *treeReader, obj *unstructured.Unstructured) (*Node, error) {
	d, err := AsDaemonSet(obj)
	if err != nil {
		return nil, err
	}
	sel, err := selectorOf(d.Spec.Selector, nil)
	if err != nil {
		return nil, err
	}
	update, err := t.daemonSetUpdateRevision(d, sel)
	if err != nil {
		return nil, err
	}
	return t.daemonSet(d, obj, sel, update, "", "")
}

// PodTemplatePath is spec.template.
func (daemonSetKind) PodTemplatePath(Ref, *unstructured.Unstructured, string) ([]string, string, error) {
	return []string{"spec", "template"}, "", nil
}

// AsDaemonSet decodes a DaemonSet read through the dynamic client.
func AsDaemonSet(obj *unstructured.Unstructured) (*appsv1.DaemonSet, error) {
	return as[appsv1.DaemonSet](obj)
}

// daemonSetRollout is a DaemonSet's rollout status, from the counts kubectl rollout status
// reads (desired, updated and available pods, as of the observed generation). Where kubectl
// gives up on OnDelete, this says why pods wait: a Canary's hold (its partition annotation) or
// OnDelete alone, which updates a pod only when it is deleted.
func daemonSetRollout(d *appsv1.DaemonSet) RolloutStatus {
	st := d.Status
	if d.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(kcmName, d.Generation, st.ObservedGeneration, nil)
	}
	desired := st.DesiredNumberScheduled
	counts := fmt.Sprintf("%d of %s updated, %d ready, %d available", st.UpdatedNumberScheduled, plural(desired, "pod", "pods"), st.NumberReady, st.NumberAvailable)
	kept, held := daemonSetHeld(d)
	switch {
	case st.NumberAvailable < desired:
	case st.UpdatedNumberScheduled >= desired:
		return status(StateComplete, counts, nil)
	case held && st.UpdatedNumberScheduled >= desired-min(kept, desired):
		return status(StatePaused, fmt.Sprintf("held by a Canary (updateStrategy OnDelete), %s kept on the stable revision; %s", plural(kept, "pod", "pods"), counts), nil)
	case held:
		return status(StateProgressing, fmt.Sprintf("released by a Canary deleting its old pods, %s kept on the stable revision; %s", plural(kept, "pod", "pods"), counts), nil)
	case d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType:
		return status(StatePaused, "OnDelete update strategy: pods are updated only when deleted; "+counts, nil)
	}
	return status(StateProgressing, counts, nil)
}

// daemonSetHeld is the number of pods a Canary keeps on the stable revision of a DaemonSet it
// holds, as the agent marks it (updateStrategy OnDelete and the partition annotation).
func daemonSetHeld(d *appsv1.DaemonSet) (int32, bool) {
	v, ok := d.Annotations[v1alpha1.AnnotationDaemonSetPartition]
	if !ok || d.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0, false
	}
	return int32(n), true
}

// daemonSetUpdateRevision is the name of the ControllerRevision (selected by the DaemonSet's
// selector, controlled by it) that records its template, "" when none does yet.
func (t *treeReader) daemonSetUpdateRevision(d *appsv1.DaemonSet, sel labels.Selector) (string, error) {
	if sel.Empty() {
		return "", fmt.Errorf("its selector is empty: it would select every ControllerRevision in the namespace")
	}
	list, err := t.kube.AppsV1().ControllerRevisions(t.ns).List(t.ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", fmt.Errorf("listing its ControllerRevisions: %w", err)
	}
	for i := range list.Items {
		cr := &list.Items[i]
		if !controlledBy(cr, d.UID) {
			continue
		}
		if revisiondata.RecordsPodTemplate(cr.Data.Raw, &d.Spec.Template) {
			return cr.Name, nil
		}
	}
	return "", nil
}

// daemonSet draws a DaemonSet's pods grouped by the revision they run, named as its
// ControllerRevisions are (NAME-HASH, the hash the DaemonSet controller labels its pods with):
// update first, then other (whose role otherRole names), then the rest. obj is the DaemonSet as
// read, for output.
func (t *treeReader) daemonSet(d *appsv1.DaemonSet, obj runtime.Object, sel labels.Selector, update, other, otherRole string) (*Node, error) {
	root := workloadNode(DaemonSet, obj, d, daemonSetRollout(d), nil, d.Status.NumberReady, d.Status.DesiredNumberScheduled)
	pods, err := t.listPods(sel)
	if err != nil {
		return nil, err
	}
	byRev := map[string][]*Node{}
	for _, p := range pods {
		if !controlledBy(p, d.UID) {
			continue
		}
		rev := d.Name + "-" + p.Labels[appsv1.ControllerRevisionHashLabelKey]
		byRev[rev] = append(byRev[rev], podNode(p))
	}
	root.Children = append(root.Children, revisionNodes(byRev, update, other, otherRole)...)
	return root, nil
}
