package workload

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	deploymentutil "k8s.io/kubectl/pkg/util/deployment"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Deployment is the native Deployment: status, tree, pause, set image and history.
var Deployment = Kind{Name: "Deployment", Short: "deploy",
	Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
	aliases:  []string{"deployment", "deployments", "deployments.apps"}, helper: deploymentKind{}}

// deploymentKind's history is its ReplicaSets, numbered by the Deployment controller.
type deploymentKind struct{ podTemplateHistory }

func (deploymentKind) revisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	return replicaSetHistory(ctx, client, namespace, ref, obj)
}

// statusRevision is the ReplicaSet numbered as the Deployment's revision annotation says.
func (deploymentKind) statusRevision(obj *unstructured.Unstructured, revs []Revision) string {
	n := obj.GetAnnotations()[annotationDeploymentRevision]
	name := ""
	for i := range revs {
		if strconv.FormatInt(revs[i].Number, 10) == n {
			name = revs[i].Name
		}
	}
	return name
}

// refuseUndo refuses a paused Deployment, as kubectl rollout undo does.
func (deploymentKind) refuseUndo(ref Ref, obj *unstructured.Unstructured) error {
	if paused, _, _ := unstructured.NestedBool(obj.Object, "spec", "paused"); paused {
		return fmt.Errorf("%s is paused: resume it (kubectl workload resume %s) before undo", ref, ref)
	}
	return nil
}

func (deploymentKind) Status(obj *unstructured.Unstructured) (RolloutStatus, error) {
	return statusOf(obj, deploymentRollout)
}

func (deploymentKind) tree(t *treeReader, obj *unstructured.Unstructured) (*Node, error) {
	d, err := AsDeployment(obj)
	if err != nil {
		return nil, err
	}
	return t.deployment(d, obj, true)
}

func (deploymentKind) PausedPath() []string { return []string{"spec", "paused"} }

// PodTemplatePath is spec.template.
func (deploymentKind) PodTemplatePath(Ref, *unstructured.Unstructured, string) ([]string, string, error) {
	return []string{"spec", "template"}, "", nil
}

// subsetWorkloads lists a UnitedDeployment's Deployment subsets, typed.
func (deploymentKind) subsetWorkloads(t *treeReader, opts metav1.ListOptions) ([]metav1.Object, error) {
	list, err := t.kube.AppsV1().Deployments(t.ns).List(t.ctx, opts)
	if err != nil {
		return nil, err
	}
	return metaObjects(list.Items), nil
}

// AsDeployment decodes a Deployment read through the dynamic client.
func AsDeployment(obj *unstructured.Unstructured) (*appsv1.Deployment, error) {
	return as[appsv1.Deployment](obj)
}

// deploymentRollout is a Deployment's rollout status, as kubectl rollout status reads it.
func deploymentRollout(d *appsv1.Deployment) RolloutStatus {
	st := d.Status
	if d.Generation > st.ObservedGeneration {
		return staleStatus(kcmName, d.Generation, st.ObservedGeneration, nil)
	}
	replicas := v1alpha1.ReplicasOrDefault(d.Spec.Replicas)
	counts := fmt.Sprintf("%d of %s updated, %d ready, %d available", st.UpdatedReplicas, plural(replicas, "replica", "replicas"), st.ReadyReplicas, st.AvailableReplicas)
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == deploymentutil.TimedOutReason {
			return status(StateDegraded, "exceeded its progress deadline; "+counts, nil)
		}
	}
	var waiting string
	switch {
	case st.UpdatedReplicas < replicas:
	case st.Replicas > st.UpdatedReplicas:
		waiting = fmt.Sprintf("; %s pending termination", plural(st.Replicas-st.UpdatedReplicas, "old replica", "old replicas"))
	case st.AvailableReplicas < st.UpdatedReplicas:
	default:
		return status(StateComplete, counts, nil)
	}
	if d.Spec.Paused {
		return status(StatePaused, "rollout paused; "+counts+waiting, nil)
	}
	return status(StateProgressing, counts+waiting, nil)
}

// deployment draws a Deployment; with revisions, its ReplicaSets (one per revision) hold its
// pods, otherwise the pods hang from the Deployment directly. obj is the Deployment as read, for
// output.
func (t *treeReader) deployment(d *appsv1.Deployment, obj runtime.Object, revisions bool) (*Node, error) {
	root := workloadNode(Deployment, obj, d, deploymentRollout(d), nil, d.Status.ReadyReplicas, v1alpha1.ReplicasOrDefault(d.Spec.Replicas))
	sel, err := selectorOf(d.Spec.Selector, nil)
	if err != nil {
		return nil, err
	}
	if sel.Empty() {
		return nil, fmt.Errorf("its selector is empty: it would select every pod in the namespace")
	}
	rsList, err := t.kube.AppsV1().ReplicaSets(t.ns).List(t.ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing its ReplicaSets: %w", err)
	}
	type rsItem struct {
		rs       *appsv1.ReplicaSet
		revision int
	}
	var sets []rsItem
	owned := map[types.UID]int{}
	for i := range rsList.Items {
		it := rsItem{rs: &rsList.Items[i]}
		if !controlledBy(it.rs, d.UID) {
			continue
		}
		it.revision, _ = strconv.Atoi(it.rs.Annotations[deploymentutil.RevisionAnnotation])
		sets = append(sets, it)
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].revision > sets[j].revision })
	for i, s := range sets {
		owned[s.rs.UID] = i
	}
	pods, err := t.listPods(sel)
	if err != nil {
		return nil, err
	}
	byRS := make([][]*Node, len(sets))
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil {
			continue
		}
		i, ok := owned[ref.UID]
		if !ok {
			continue
		}
		byRS[i] = append(byRS[i], podNode(p))
	}
	for i, s := range sets {
		if !revisions {
			root.Children = append(root.Children, byRS[i]...)
			continue
		}
		if deref(s.rs.Spec.Replicas, 0) == 0 && len(byRS[i]) == 0 {
			continue // an old revision kept for undo, with nothing running
		}
		n := &Node{Object: s.rs, Name: "rs/" + s.rs.Name, Ready: fmt.Sprintf("%d/%d", s.rs.Status.ReadyReplicas, deref(s.rs.Spec.Replicas, 0)),
			Created: s.rs.CreationTimestamp.Time, Info: fmt.Sprintf("revision %d", s.revision), Children: byRS[i]}
		if i == 0 {
			n.Info += " (newest)"
		}
		root.Children = append(root.Children, n)
	}
	return root, nil
}
