package workload

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
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
	var root *Node
	var err error
	switch ref.Kind.Name {
	case TApp.Name:
		root, err = t.tapp(obj)
	case UnitedDeployment.Name:
		root, err = t.unitedDeployment(obj)
	case Canary.Name:
		root, err = t.canary(obj)
	case Deployment.Name:
		var d appsv1.Deployment
		if err := fromUnstructured(obj, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		root, err = t.deployment(&d, obj, true)
	case StatefulSet.Name:
		var s appsv1.StatefulSet
		if err := fromUnstructured(obj, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		root, err = t.statefulSet(&s, obj, true)
	default:
		return nil, fmt.Errorf("%s: no tree for a %s", ref, ref.Kind.Name)
	}
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

func (t *treeReader) tapp(obj *unstructured.Unstructured) (*Node, error) {
	var tapp v1alpha1.TApp
	if err := fromUnstructured(obj, &tapp); err != nil {
		return nil, err
	}
	replicas := v1alpha1.ReplicasOrDefault(tapp.Spec.Replicas)
	var wanted int32
	for id := int32(0); id < replicas; id++ {
		if tapp.Spec.Statuses[strconv.Itoa(int(id))] != v1alpha1.InstanceKilled {
			wanted++
		}
	}
	st, stErr := RolloutStatusOf(TApp, obj)
	root := workloadNode(TApp, obj, obj, st, stErr, tapp.Status.ReadyReplicas, wanted)
	sel, err := selectorOf(tapp.Spec.Selector, map[string]string{v1alpha1.LabelTAppName: tapp.Name})
	if err != nil {
		return nil, err
	}
	pods, err := t.listPods(sel)
	if err != nil {
		return nil, err
	}
	byID := map[int][]*corev1.Pod{}
	var strays []*corev1.Pod
	maxID := int(replicas) - 1
	for _, p := range pods {
		if !controlledBy(p, tapp.UID) && tapp.UID != "" {
			continue
		}
		id, err := strconv.Atoi(p.Labels[v1alpha1.LabelInstanceID])
		if err != nil || id < 0 {
			strays = append(strays, p)
			continue
		}
		byID[id] = append(byID[id], p)
		maxID = max(maxID, id)
	}
	for id := 0; id <= maxID; id++ {
		key := strconv.Itoa(id)
		info := "template " + tappTemplateName(&tapp, key)
		if id >= int(replicas) {
			info = "above replicas: being removed"
		}
		state := string(tapp.Status.Statuses[key])
		if tapp.Spec.Statuses[key] == v1alpha1.InstanceKilled {
			info = "killed (kubectl workload start-instance to start it)"
		}
		if len(byID[id]) == 0 {
			if id >= int(replicas) {
				continue
			}
			root.Children = append(root.Children, &Node{Name: fmt.Sprintf("#%d (no pod)", id), Status: orDefault(state, "NotCreated"), Info: info})
			continue
		}
		if state != "" && state != string(v1alpha1.InstanceRunningNow) {
			info = "instance " + state + ", " + info
		}
		for _, p := range byID[id] {
			n := podNode(p)
			n.Name = fmt.Sprintf("#%d %s", id, n.Name)
			n.Info = info
			root.Children = append(root.Children, n)
		}
	}
	for _, p := range strays {
		n := podNode(p)
		n.Info = "no instance id label"
		root.Children = append(root.Children, n)
	}
	return root, nil
}

// tappTemplateName is the template an instance runs: templates[id], else defaultTemplateName,
// else spec.template.
func tappTemplateName(t *v1alpha1.TApp, id string) string {
	if name := t.Spec.Templates[id]; name != "" {
		return name
	}
	if t.Spec.DefaultTemplateName != "" {
		return t.Spec.DefaultTemplateName
	}
	return "spec.template"
}

// subsetKind is the kind of a UnitedDeployment's subset workloads.
func subsetKind(ud *v1alpha1.UnitedDeployment) (Kind, bool) {
	switch {
	case ud.Spec.Template.StatefulSetTemplate != nil:
		return StatefulSet, true
	case ud.Spec.Template.DeploymentTemplate != nil:
		return Deployment, true
	case ud.Spec.Template.TAppTemplate != nil:
		return TApp, true
	}
	return Kind{}, false
}

func (t *treeReader) unitedDeployment(obj *unstructured.Unstructured) (*Node, error) {
	var ud v1alpha1.UnitedDeployment
	if err := fromUnstructured(obj, &ud); err != nil {
		return nil, err
	}
	st, stErr := RolloutStatusOf(UnitedDeployment, obj)
	root := workloadNode(UnitedDeployment, obj, obj, st, stErr, ud.Status.ReadyReplicas, v1alpha1.ReplicasOrDefault(ud.Spec.Replicas))
	kind, ok := subsetKind(&ud)
	if !ok {
		return root, nil
	}
	subsets, err := t.subsetWorkloads(kind, ud.Name)
	if err != nil {
		return nil, fmt.Errorf("listing its subset %s workloads: %w", kind.Name, err)
	}
	sort.Slice(subsets, func(i, j int) bool {
		si, sj := subsets[i].GetLabels()[v1alpha1.LabelSubsetName], subsets[j].GetLabels()[v1alpha1.LabelSubsetName]
		if si != sj {
			return si < sj
		}
		return subsets[i].GetName() < subsets[j].GetName()
	})
	partitions := map[string]int32{}
	for _, s := range ud.Status.SubsetStatuses {
		partitions[s.Name] = s.Partition
	}
	for _, w := range subsets {
		if ud.UID != "" && !controlledBy(w, ud.UID) {
			continue
		}
		var n *Node
		switch w := w.(type) {
		case *unstructured.Unstructured:
			n, err = t.tapp(w)
		case *appsv1.Deployment:
			n, err = t.deployment(w, w, false)
		case *appsv1.StatefulSet:
			n, err = t.statefulSet(w, w, false)
		}
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", kind.Short, w.GetName(), err)
		}
		n.Name = kind.Short + "/" + w.GetName()
		subset := w.GetLabels()[v1alpha1.LabelSubsetName]
		info := "subset " + subset
		if p := partitions[subset]; p > 0 {
			info += fmt.Sprintf(", partition %d", p)
		}
		if rev := w.GetLabels()[v1alpha1.LabelRevision]; rev != "" {
			info += ", revision " + rev
			if rev == ud.Status.UpdatedRevision {
				info += " (updated)"
			}
		}
		n.Info = info
		root.Children = append(root.Children, n)
	}
	return root, nil
}

// subsetWorkloads lists a UnitedDeployment's subset workloads by its label: TApps through the
// dynamic client (as *unstructured.Unstructured), Deployments and StatefulSets typed.
func (t *treeReader) subsetWorkloads(kind Kind, ud string) ([]metav1.Object, error) {
	opts := metav1.ListOptions{LabelSelector: labels.Set{v1alpha1.LabelUnitedDeploymentName: ud}.String()}
	var out []metav1.Object
	switch kind.Name {
	case TApp.Name:
		list, err := t.client.Resource(kind.Resource).Namespace(t.ns).List(t.ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, withKind(&list.Items[i], kind.Resource.GroupVersion().String(), kind.Name))
		}
	case Deployment.Name:
		list, err := t.kube.AppsV1().Deployments(t.ns).List(t.ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case StatefulSet.Name:
		list, err := t.kube.AppsV1().StatefulSets(t.ns).List(t.ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	default:
		return nil, fmt.Errorf("no subset workloads of kind %s", kind.Name)
	}
	return out, nil
}

func (t *treeReader) canary(obj *unstructured.Unstructured) (*Node, error) {
	var c v1alpha1.Canary
	if err := fromUnstructured(obj, &c); err != nil {
		return nil, err
	}
	st, stErr := RolloutStatusOf(Canary, obj)
	root := workloadNode(Canary, obj, obj, st, stErr, c.Status.CanaryAvailable+c.Status.StableAvailable, c.Spec.Replicas)
	if len(c.Status.Batches) > 0 {
		batches := &Node{Name: "batches", Info: fmt.Sprintf("current %d of %d, pauseType %s", c.Status.CurrentBatch, len(c.Status.Batches), orDefault(string(c.Spec.PauseType), string(v1alpha1.PauseFirst)))}
		for _, b := range c.Status.Batches {
			n := &Node{Name: fmt.Sprintf("batch %d", b.Index), Status: string(b.State), Info: plural(b.CanaryReplicas, "canary pod", "canary pods")}
			if b.StartTime != nil {
				n.Created = b.StartTime.Time
			}
			if b.Index == c.Status.CurrentBatch {
				n.Info += " (current)"
			}
			batches.Children = append(batches.Children, n)
		}
		root.Children = append(root.Children, batches)
	}
	for _, d := range []struct{ name, role string }{{c.Spec.StableRef.Name, "stable"}, {c.Spec.Canary.Name, "canary"}} {
		deploy, err := t.kube.AppsV1().Deployments(t.ns).Get(t.ctx, d.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			root.Children = append(root.Children, &Node{Name: Deployment.Short + "/" + d.name, Status: "NotFound", Info: d.role})
			continue
		case err != nil:
			return nil, fmt.Errorf("reading its %s Deployment %q: %w", d.role, d.name, err)
		}
		n, err := t.deployment(deploy, deploy, false)
		if err != nil {
			return nil, fmt.Errorf("%s Deployment %q: %w", d.role, d.name, err)
		}
		n.Info = d.role
		root.Children = append(root.Children, n)
	}
	return root, nil
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
		it.revision, _ = strconv.Atoi(it.rs.Annotations["deployment.kubernetes.io/revision"])
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
	var revs []string
	for r := range byRev {
		revs = append(revs, r)
	}
	// The update revision first, then the current one, then any other.
	rank := func(r string) int {
		switch r {
		case s.Status.UpdateRevision:
			return 0
		case s.Status.CurrentRevision:
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
	for _, r := range revs {
		n := &Node{Name: "revision " + orDefault(r, "(unknown)"), Children: byRev[r]}
		switch {
		case r == s.Status.UpdateRevision && r == s.Status.CurrentRevision:
			n.Info = "current and update revision"
		case r == s.Status.UpdateRevision:
			n.Info = "update revision"
		case r == s.Status.CurrentRevision:
			n.Info = "current revision"
		}
		n.Info = joinInfo(n.Info, plural(int32(len(byRev[r])), "pod", "pods"))
		root.Children = append(root.Children, n)
	}
	return root, nil
}

func joinInfo(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}
