package workload

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// TApp is the kind of a set of numbered instances, each with its own template and status.
var TApp = Kind{Name: "TApp", Short: "tapp",
	Resource: v1alpha1.SchemeGroupVersion.WithResource("tapps"),
	aliases:  []string{"tapps", "tapps.apps.workload.dev"}, helper: tappKind{}}

// tappKind's history is the ControllerRevisions the agent records of spec.template and
// spec.templatePool.
type tappKind struct {
	podTemplateHistory
	partitionTarget
}

// templatePool: a TApp keeps named pod templates beside spec.template (spec.templatePool).
func (tappKind) templatePool() {}

// targetNodes is the TApp a Canary releases through its partition.
func (tappKind) targetNodes(t *treeReader, c *v1alpha1.Canary) ([]*Node, error) {
	n, err := t.targetObject(TApp, c.Spec.TargetRef.Name)
	return targetLine(TApp, c, n, err)
}

func (tappKind) Status(obj *unstructured.Unstructured) (RolloutStatus, error) { return tappStatus(obj) }

func (tappKind) tree(t *treeReader, obj *unstructured.Unstructured) (*Node, error) {
	return t.tapp(obj)
}

func (tappKind) Replicas(obj *unstructured.Unstructured) (Replicas, error) {
	t, err := AsTApp(obj)
	if err != nil {
		return Replicas{}, err
	}
	return Replicas{tappWanted(t), t.Status.ReadyReplicas, t.Status.UpdatedReplicas}, nil
}

// tappWanted is how many instances should run: the ids below replicas that are not killed.
func tappWanted(t *v1alpha1.TApp) int32 {
	replicas := v1alpha1.ReplicasOrDefault(t.Spec.Replicas)
	wanted := replicas
	for id := int32(0); id < replicas; id++ {
		if t.Spec.Statuses[strconv.Itoa(int(id))] == v1alpha1.InstanceKilled {
			wanted--
		}
	}
	return wanted
}

func (tappKind) revisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	return controllerRevisionHistory(ctx, client, namespace, ref, obj,
		labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByAgent, v1alpha1.LabelTAppName: obj.GetName()}).String())
}

func (tappKind) statusRevision(obj *unstructured.Unstructured, _ []Revision) string {
	return statusString(obj, "updateRevision")
}

func (tappKind) PausedPath() []string { return []string{"spec", "updateStrategy", "paused"} }

func (tappKind) partitionPatch(n int32) []byte { return partition.TAppPatch(n) }

// SetPartition sets spec.updateStrategy.partition: instances with an id below it keep their
// template.
func (k tappKind) SetPartition(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	n, err := parseSinglePartition(ref, args)
	if err != nil {
		return Change{}, err
	}
	t, err := AsTApp(obj)
	if err != nil {
		return Change{}, err
	}
	return singlePartitionChange(ref, k, n, v1alpha1.ReplicasOrDefault(t.Spec.Replicas), partition.TApp(t))
}

// PodTemplatePath is spec.template, or the templatePool entry named by pool; with pool empty,
// the templatePool entry named by spec.defaultTemplateName if it is set (the template that
// instances without their own assignment run), else spec.template.
func (tappKind) PodTemplatePath(ref Ref, obj *unstructured.Unstructured, pool string) ([]string, string, error) {
	if pool == "" {
		pool, _, _ = unstructured.NestedString(obj.Object, "spec", "defaultTemplateName")
	}
	if pool == "" {
		return []string{"spec", "template"}, "", nil
	}
	entries, _, _ := unstructured.NestedMap(obj.Object, "spec", "templatePool")
	if _, ok := entries[pool]; !ok {
		var names []string
		for n := range entries {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, "", fmt.Errorf("%s has no template %q: its templatePool is empty", ref, pool)
		}
		return nil, "", fmt.Errorf("%s has no template %q: its templatePool holds %s", ref, pool, strings.Join(names, ", "))
	}
	return []string{"spec", "templatePool", pool}, "template " + pool, nil
}

// subsetWorkloads lists a UnitedDeployment's TApp subsets, through the dynamic client.
func (tappKind) subsetWorkloads(t *treeReader, opts metav1.ListOptions) ([]metav1.Object, error) {
	list, err := t.client.Resource(TApp.Resource).Namespace(t.ns).List(t.ctx, opts)
	if err != nil {
		return nil, err
	}
	var out []metav1.Object
	for i := range list.Items {
		out = append(out, withKind(&list.Items[i], TApp.Resource.GroupVersion().String(), TApp.Name))
	}
	return out, nil
}

// AsTApp decodes a TApp read through the dynamic client.
func AsTApp(obj *unstructured.Unstructured) (*v1alpha1.TApp, error) { return as[v1alpha1.TApp](obj) }

func tappStatus(obj *unstructured.Unstructured) (RolloutStatus, error) {
	var t v1alpha1.TApp
	if err := fromUnstructured(obj, &t); err != nil {
		return RolloutStatus{}, err
	}
	st := t.Status
	replicas := v1alpha1.ReplicasOrDefault(t.Spec.Replicas)
	held := partition.TApp(&t)
	// The instances that should run: ids below replicas that are not killed; of those, the ones
	// at or above the partition are the ones the rollout moves.
	var wanted, rolled int32
	for id := int32(0); id < replicas; id++ {
		if t.Spec.Statuses[strconv.Itoa(int(id))] == v1alpha1.InstanceKilled {
			continue
		}
		wanted++
		if id >= held {
			rolled++
		}
	}
	progress := instanceProgress(st.Statuses)
	if t.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(agentName, t.Generation, st.ObservedGeneration, progress), nil
	}
	counts := fmt.Sprintf("%d of %s updated, %d ready, %d available", st.UpdatedReplicas, plural(wanted, "instance", "instances"), st.ReadyReplicas, st.AvailableReplicas)
	if c := trueCondition(st.Conditions, v1alpha1.ConditionReplicaFailure); c != nil {
		failure := fmt.Sprintf("%s: %s; %s", c.Reason, c.Message, counts)
		if v1alpha1.TAppSpecFailures[c.Reason] {
			return status(StateDegraded, failure, progress), nil
		}
		// A failed create or delete is retried by the agent: report it, keep waiting.
		counts = failure
	}
	if st.AppStatus == v1alpha1.AppFailed {
		return status(StateDegraded, "instances failed; "+counts, progress), nil
	}
	var complete bool
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionProgressing); c != nil && c.ObservedGeneration >= t.Generation {
		complete = c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonRolloutComplete
	} else {
		complete = st.UpdatedReplicas >= rolled && st.AvailableReplicas >= wanted && st.Replicas <= wanted
	}
	switch {
	case complete && held > 0 && st.UpdatedReplicas < wanted:
		return status(StatePaused, fmt.Sprintf("held by partition %d (instances below it keep their template); %s", held, counts), progress), nil
	case complete:
		return status(StateComplete, counts, progress), nil
	case t.Spec.UpdateStrategy.Paused:
		return status(StatePaused, "updates paused; "+counts, progress), nil
	}
	return status(StateProgressing, counts, progress), nil
}

// instanceOrder is the order in which instance statuses are listed: running, moving, stopped,
// failed.
var instanceOrder = []v1alpha1.InstanceStatus{
	v1alpha1.InstanceRunningNow, v1alpha1.InstanceUpdating, v1alpha1.InstancePending, v1alpha1.InstanceNotCreated,
	v1alpha1.InstanceKilling, v1alpha1.InstanceKilledNow, v1alpha1.InstancePodSucc, v1alpha1.InstanceSucc,
	v1alpha1.InstancePodFailed, v1alpha1.InstanceFailed, v1alpha1.InstanceUnknown,
}

// maxRanges bounds the id ranges listed per status, so that a line stays readable for a TApp of
// thousands of instances.
const maxRanges = 12

// instanceProgress groups a TApp's instances by status: one line per status, with the ids as
// ranges ("Running     4  0-2, 4").
func instanceProgress(statuses map[string]v1alpha1.InstanceStatus) []string {
	ids := map[v1alpha1.InstanceStatus][]int{}
	for id, s := range statuses {
		n, err := strconv.Atoi(id)
		if err != nil {
			continue
		}
		ids[s] = append(ids[s], n)
	}
	order := append([]v1alpha1.InstanceStatus{}, instanceOrder...)
	var others []string
	for s := range ids {
		if !instanceStatusKnown(s) {
			others = append(others, string(s))
		}
	}
	sort.Strings(others)
	for _, s := range others {
		order = append(order, v1alpha1.InstanceStatus(s))
	}
	var lines []string
	for _, s := range order {
		list := ids[s]
		if len(list) == 0 {
			continue
		}
		sort.Ints(list)
		lines = append(lines, fmt.Sprintf("%-10s %5d  %s", s, len(list), idRanges(list)))
	}
	return lines
}

func instanceStatusKnown(s v1alpha1.InstanceStatus) bool {
	for _, k := range instanceOrder {
		if k == s {
			return true
		}
	}
	return false
}

// idRanges writes sorted ids as "0-2, 4, 7-9", at most maxRanges ranges.
func idRanges(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if len(parts) == maxRanges {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(ids)-i))
			break
		}
		if i == j {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
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

func (t *treeReader) tapp(obj *unstructured.Unstructured) (*Node, error) {
	var tapp v1alpha1.TApp
	if err := fromUnstructured(obj, &tapp); err != nil {
		return nil, err
	}
	replicas := v1alpha1.ReplicasOrDefault(tapp.Spec.Replicas)
	st, stErr := RolloutStatusOf(TApp, obj)
	root := workloadNode(TApp, obj, obj, st, stErr, tapp.Status.ReadyReplicas, tappWanted(&tapp))
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
