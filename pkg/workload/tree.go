package workload

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
)

// Node is one line of a workload's tree: the workload, a subset workload, a batch, a revision, an
// instance or a pod.
type Node struct {
	// Object is the API object the line shows: as read through the dynamic client
	// (*unstructured.Unstructured) or the typed clientset (*corev1.Pod, *appsv1.ReplicaSet, …);
	// nil for a line that is not an object (a batch, an instance without a pod, a group heading).
	Object runtime.Object
	// Name is the first column: "tapp/web", "pod/web-0", "batch 2/4", "#3 (no pod)".
	Name string
	// Ready ("1/1"), Status, Restarts: empty when they do not apply.
	Ready, Status, Restarts string
	// Created is when the object was created (zero when unknown or not an object).
	Created time.Time
	// Info says what else matters about the line: template, partition, revision, role.
	Info     string
	Children []*Node
}

// Objects lists the objects of the tree, parents before children.
func (n *Node) Objects() []runtime.Object {
	var out []runtime.Object
	if n.Object != nil {
		out = append(out, n.Object)
	}
	for _, c := range n.Children {
		out = append(out, c.Objects()...)
	}
	return out
}

// AsList wraps objects in a v1 List, as kubectl get prints several objects.
func AsList(objs []*unstructured.Unstructured) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "List", "metadata": map[string]interface{}{"resourceVersion": ""}}}
	for _, obj := range objs {
		list.Items = append(list.Items, *obj)
	}
	return list
}

// List is the tree's objects in a v1 List (AsList), for -o json|yaml|name. Typed objects are
// converted to unstructured ones here, only when they are printed, with their apiVersion and
// kind (a typed list's items lack them).
func (n *Node) List() (*unstructured.UnstructuredList, error) {
	var objs []*unstructured.Unstructured
	for _, obj := range n.Objects() {
		u, err := printable(obj)
		if err != nil {
			return nil, err
		}
		objs = append(objs, u)
	}
	return AsList(objs), nil
}

// printable is obj as an unstructured object with its apiVersion and kind.
func printable(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	gvks, _, err := kubescheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(gvks[0].GroupVersion().String())
	u.SetKind(gvks[0].Kind)
	return u, nil
}

// Tree reads a workload's children and draws them as a tree: TApp → instances (pods);
// UnitedDeployment → subset workloads → pods; Canary → batches, stable and canary Deployments →
// pods; Deployment → ReplicaSets (revisions) → pods; StatefulSet → revisions → pods. Children are
// read with label selectors (the workload's own selector, narrowed by our labels): never a list
// of every pod of the namespace. Native objects (pods above all) are read with kube, typed and
// as protobuf (see KubeClient); our custom resources with client.
func Tree(ctx context.Context, client dynamic.Interface, kube kubernetes.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) (*Node, error) {
	t := &treeReader{ctx: ctx, client: client, kube: kube, ns: namespace}
	if ref.Kind.helper == nil {
		return nil, fmt.Errorf("%s: no tree for a %s", ref, ref.Kind.Name)
	}
	root, err := ref.Kind.helper.tree(t, obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	root.Name = ref.String()
	return root, nil
}

type treeReader struct {
	ctx    context.Context
	client dynamic.Interface
	kube   kubernetes.Interface
	ns     string
}

// workloadNode is the line of a workload: its rollout phase and summary, ready of desired.
// obj is what the line shows (and prints with -o); st its rollout status, if known.
func workloadNode(k Kind, obj runtime.Object, m metav1.Object, st RolloutStatus, stErr error, ready, desired int32) *Node {
	n := &Node{Object: obj, Name: k.Short + "/" + m.GetName(), Ready: fmt.Sprintf("%d/%d", ready, desired),
		Created: m.GetCreationTimestamp().Time}
	if stErr == nil {
		n.Status, n.Info = st.Phase, st.Summary
	}
	return n
}

// listPods lists the pods matching a workload's selector. An empty selector would match every
// pod of the namespace: that is refused rather than read.
func (t *treeReader) listPods(sel labels.Selector) ([]*corev1.Pod, error) {
	if sel.Empty() {
		return nil, fmt.Errorf("its selector is empty: it would select every pod in the namespace")
	}
	list, err := t.kube.CoreV1().Pods(t.ns).List(t.ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing its pods: %w", err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	sort.Slice(pods, func(i, j int) bool { return podLess(pods[i].Name, pods[j].Name) })
	return pods, nil
}

// podLess orders pod names with their numeric suffixes as numbers: web-2 before web-10.
func podLess(a, b string) bool {
	pa, na := splitOrdinal(a)
	pb, nb := splitOrdinal(b)
	if pa != pb || na < 0 || nb < 0 {
		return a < b
	}
	return na < nb
}

func splitOrdinal(name string) (string, int) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) {
		return name, -1
	}
	n, err := strconv.Atoi(name[i:])
	if err != nil {
		return name, -1
	}
	return name[:i], n
}

// withKind sets the apiVersion and kind of a list item that lacks them (lists served by some
// clients leave them to the list), so that printers can name it.
func withKind(obj *unstructured.Unstructured, apiVersion, kind string) *unstructured.Unstructured {
	if obj.GetKind() == "" {
		obj.SetAPIVersion(apiVersion)
		obj.SetKind(kind)
	}
	return obj
}

func selectorOf(sel *metav1.LabelSelector, extra map[string]string) (labels.Selector, error) {
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("invalid selector: %w", err)
	}
	for k, v := range extra {
		r, err := labels.NewRequirement(k, selection.Equals, []string{v})
		if err != nil {
			return nil, err
		}
		s = s.Add(*r)
	}
	return s, nil
}

func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == uid
}

// podNode is the line of a pod: ready containers, kubectl's status reason, restarts.
func podNode(p *corev1.Pod) *Node {
	var ready, restarts int
	for _, c := range p.Status.ContainerStatuses {
		if c.Ready {
			ready++
		}
		restarts += int(c.RestartCount)
	}
	return &Node{Object: p, Name: "pod/" + p.Name,
		Ready:    fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)),
		Status:   PodStatus(p),
		Restarts: strconv.Itoa(restarts),
		Created:  p.CreationTimestamp.Time}
}

// PodStatus is the word kubectl get pods shows in STATUS: Terminating, a container's waiting or
// terminated reason (CrashLoopBackOff, ImagePullBackOff, Error, …), Init:…, or the phase.
func PodStatus(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "Terminating"
	}
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	if reason == "" {
		reason = "Pending"
	}
	for i, c := range pod.Status.InitContainerStatuses {
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case c.State.Terminated != nil:
			return "Init:" + orDefault(c.State.Terminated.Reason, "Error")
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			return "Init:" + c.State.Waiting.Reason
		default:
			return fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
	}
	for _, c := range pod.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			reason = c.State.Waiting.Reason
		case c.State.Terminated != nil && c.State.Terminated.Reason != "":
			reason = c.State.Terminated.Reason
		}
	}
	return reason
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func joinInfo(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

// revisionNodes are the lines of a workload's pods grouped by the revision they run: update
// first, then other (otherRole says what it is: "current", "stable"), then the rest by name.
func revisionNodes(byRev map[string][]*Node, update, other, otherRole string) []*Node {
	var revs []string
	for r := range byRev {
		revs = append(revs, r)
	}
	rank := func(r string) int {
		switch r {
		case update:
			return 0
		case other:
			return 1
		}
		return 2
	}
	sort.Slice(revs, func(i, j int) bool {
		if rank(revs[i]) != rank(revs[j]) {
			return rank(revs[i]) < rank(revs[j])
		}
		return revs[i] < revs[j]
	})
	var out []*Node
	for _, r := range revs {
		n := &Node{Name: "revision " + orDefault(r, "(unknown)"), Children: byRev[r]}
		switch {
		case r == update && r == other:
			n.Info = otherRole + " and update revision"
		case r == update:
			n.Info = "update revision"
		case r == other:
			n.Info = otherRole + " revision"
		}
		n.Info = joinInfo(n.Info, plural(int32(len(byRev[r])), "pod", "pods"))
		out = append(out, n)
	}
	return out
}
