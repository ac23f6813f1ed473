package workload

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// StatefulSet is the native StatefulSet: status, tree, set-partition, set image and history. It
// has no pause switch: hold its pods with set-partition instead.
var StatefulSet = Kind{Name: "StatefulSet", Short: "sts",
	Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
	aliases:  []string{"statefulset", "statefulsets", "statefulsets.apps"}, helper: statefulSetKind{}}

// statefulSetKind's history is the ControllerRevisions the StatefulSet controller records.
type statefulSetKind struct {
	podTemplateHistory
	partitionTarget
}

// targetNodes is the StatefulSet a Canary releases through its partition (read typed, as native
// objects are).
func (statefulSetKind) targetNodes(t *treeReader, c *v1alpha1.Canary) ([]*Node, error) {
	n, err := t.targetStatefulSet(c.Spec.TargetRef.Name)
	return targetLine(StatefulSet, c, n, err)
}

func (statefulSetKind) revisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	return selectedRevisions(ctx, client, namespace, ref, obj)
}

func (statefulSetKind) statusRevision(obj *unstructured.Unstructured, _ []Revision) string {
	return statusString(obj, "updateRevision")
}

func (statefulSetKind) Status(obj *unstructured.Unstructured) (RolloutStatus, error) {
	return statusOf(obj, statefulSetRollout)
}

func (statefulSetKind) tree(t *treeReader, obj *unstructured.Unstructured) (*Node, error) {
	s, err := AsStatefulSet(obj)
	if err != nil {
		return nil, err
	}
	return t.statefulSet(s, obj, true)
}

func (statefulSetKind) partitionPatch(n int32) []byte { return partition.StatefulSetPatch(n) }

// SetPartition sets spec.updateStrategy.rollingUpdate.partition: pods with an ordinal below it
// keep the current revision. A StatefulSet using OnDelete has no partition.
func (k statefulSetKind) SetPartition(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	n, err := parseSinglePartition(ref, args)
	if err != nil {
		return Change{}, err
	}
	s, err := AsStatefulSet(obj)
	if err != nil {
		return Change{}, err
	}
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return Change{}, fmt.Errorf("%s uses the OnDelete update strategy, which has no partition: its pods change only when deleted", ref)
	}
	return singlePartitionChange(ref, k, n, v1alpha1.ReplicasOrDefault(s.Spec.Replicas), partition.StatefulSet(s))
}

// PodTemplatePath is spec.template.
func (statefulSetKind) PodTemplatePath(Ref, *unstructured.Unstructured, string) ([]string, string, error) {
	return []string{"spec", "template"}, "", nil
}

// subsetWorkloads lists a UnitedDeployment's StatefulSet subsets, typed.
func (statefulSetKind) subsetWorkloads(t *treeReader, opts metav1.ListOptions) ([]metav1.Object, error) {
	list, err := t.kube.AppsV1().StatefulSets(t.ns).List(t.ctx, opts)
	if err != nil {
		return nil, err
	}
	return metaObjects(list.Items), nil
}

// AsStatefulSet decodes a StatefulSet read through the dynamic client.
func AsStatefulSet(obj *unstructured.Unstructured) (*appsv1.StatefulSet, error) {
	return as[appsv1.StatefulSet](obj)
}

// statefulSetRollout is a StatefulSet's rollout status: partitions and OnDelete pause it.
func statefulSetRollout(s *appsv1.StatefulSet) RolloutStatus {
	st := s.Status
	if s.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(kcmName, s.Generation, st.ObservedGeneration, nil)
	}
	replicas := v1alpha1.ReplicasOrDefault(s.Spec.Replicas)
	held := min(partition.StatefulSet(s), replicas)
	revision := ""
	if st.UpdateRevision != "" {
		revision = " (revision " + st.UpdateRevision + ")"
	}
	counts := fmt.Sprintf("%d of %s updated%s, %d ready", st.UpdatedReplicas, plural(replicas, "pod", "pods"), revision, st.ReadyReplicas)
	pending := st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision
	ready := st.ReadyReplicas >= replicas && st.Replicas == replicas
	switch {
	case !ready:
	case !pending:
		return status(StateComplete, counts, nil)
	case s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		return status(StatePaused, "OnDelete update strategy: pods are updated only when deleted; "+counts, nil)
	case held > 0 && st.UpdatedReplicas >= replicas-held:
		return status(StatePaused, fmt.Sprintf("held by partition %d (pods below it keep the old revision); %s", held, counts), nil)
	}
	return status(StateProgressing, counts, nil)
}

// statefulSet draws a StatefulSet's pods; with revisions, grouped by the revision they run. obj
// is the StatefulSet as read, for output.
func (t *treeReader) statefulSet(s *appsv1.StatefulSet, obj runtime.Object, revisions bool) (*Node, error) {
	root := workloadNode(StatefulSet, obj, s, statefulSetRollout(s), nil, s.Status.ReadyReplicas, v1alpha1.ReplicasOrDefault(s.Spec.Replicas))
	sel, err := selectorOf(s.Spec.Selector, nil)
	if err != nil {
		return nil, err
	}
	pods, err := t.listPods(sel)
	if err != nil {
		return nil, err
	}
	byRev := map[string][]*Node{}
	for _, p := range pods {
		if s.UID != "" && !controlledBy(p, s.UID) {
			continue
		}
		if !revisions {
			root.Children = append(root.Children, podNode(p))
			continue
		}
		rev := p.Labels[appsv1.ControllerRevisionHashLabelKey]
		byRev[rev] = append(byRev[rev], podNode(p))
	}
	root.Children = append(root.Children, revisionNodes(byRev, s.Status.UpdateRevision, s.Status.CurrentRevision, "current")...)
	return root, nil
}
