package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// UnitedDeployment is the kind that spreads one workload over subsets (zones, node pools), each
// a StatefulSet, a Deployment or a TApp.
var UnitedDeployment = Kind{Name: "UnitedDeployment", Short: "ud",
	Resource: v1alpha1.SchemeGroupVersion.WithResource("uniteddeployments"),
	aliases:  []string{"uniteddeployment", "uniteddeployments", "uniteddeployments.apps.workload.dev"}, helper: unitedDeploymentKind{}}

// unitedDeploymentKind's history is the ControllerRevisions the agent records of its
// spec.template, a subset template.
type unitedDeploymentKind struct{ partitionTarget }

// targetNodes is the UnitedDeployment a Canary releases through its subsets' partitions.
func (unitedDeploymentKind) targetNodes(t *treeReader, c *v1alpha1.Canary) ([]*Node, error) {
	n, err := t.targetObject(UnitedDeployment, c.Spec.TargetRef.Name)
	return targetLine(UnitedDeployment, c, n, err)
}

func (unitedDeploymentKind) revisions(ctx context.Context, client dynamic.Interface, namespace string, ref Ref, obj *unstructured.Unstructured) ([]Revision, error) {
	return controllerRevisionHistory(ctx, client, namespace, ref, obj,
		labels.SelectorFromSet(labels.Set{v1alpha1.LabelUnitedDeploymentName: obj.GetName()}).String())
}

func (unitedDeploymentKind) statusRevision(obj *unstructured.Unstructured, _ []Revision) string {
	return statusString(obj, "updatedRevision")
}

// revisionPodTemplate is the pod template inside the subset template (empty when the subset
// template sets no kind).
func (unitedDeploymentKind) revisionPodTemplate(template json.RawMessage) (*corev1.PodTemplateSpec, error) {
	st, err := (revisiondata.Data{Template: template}).SubsetTemplate()
	if err != nil {
		return nil, err
	}
	switch {
	case st.StatefulSetTemplate != nil:
		return &st.StatefulSetTemplate.Spec.Template, nil
	case st.DeploymentTemplate != nil:
		return &st.DeploymentTemplate.Spec.Template, nil
	case st.TAppTemplate != nil:
		return &st.TAppTemplate.Spec.Template, nil
	}
	return &corev1.PodTemplateSpec{}, nil
}

func (unitedDeploymentKind) sameTemplate(a, b json.RawMessage) (bool, error) {
	return semanticallyEqual[v1alpha1.SubsetTemplate](a, b)
}

func (unitedDeploymentKind) Status(obj *unstructured.Unstructured) (RolloutStatus, error) {
	return unitedDeploymentStatus(obj)
}

func (unitedDeploymentKind) tree(t *treeReader, obj *unstructured.Unstructured) (*Node, error) {
	return t.unitedDeployment(obj)
}

func (unitedDeploymentKind) Replicas(obj *unstructured.Unstructured) (Replicas, error) {
	ud, err := AsUnitedDeployment(obj)
	if err != nil {
		return Replicas{}, err
	}
	return Replicas{v1alpha1.ReplicasOrDefault(ud.Spec.Replicas), ud.Status.ReadyReplicas, ud.Status.UpdatedReplicas}, nil
}

func (unitedDeploymentKind) PausedPath() []string {
	return []string{"spec", "updateStrategy", "paused"}
}

// SetPartition sets the partitions of subsets given as SUBSET=N ….
func (unitedDeploymentKind) SetPartition(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	return setSubsetPartitions(ref, obj, args)
}

func (unitedDeploymentKind) CheckPromote(ref Ref, o PromoteOptions) error {
	if o.Full {
		return fmt.Errorf("%s: --full applies to a canary; promote a ud with --subset NAME or --all", ref)
	}
	return nil
}

// Promote sets the partitions of the subsets named (of every subset with --all) to 0.
func (unitedDeploymentKind) Promote(ref Ref, obj *unstructured.Unstructured, o PromoteOptions) (Change, int32, error) {
	change, err := PromoteSubsets(ref, obj, o.Subsets, o.All)
	return change, 0, err
}

// PodTemplatePath is the pod template inside the one subset template in use
// (spec.template.statefulSetTemplate, deploymentTemplate or tappTemplate).
func (unitedDeploymentKind) PodTemplatePath(ref Ref, obj *unstructured.Unstructured, _ string) ([]string, string, error) {
	for _, kind := range []string{"statefulSetTemplate", "deploymentTemplate", "tappTemplate"} {
		if _, ok, _ := unstructured.NestedMap(obj.Object, "spec", "template", kind); ok {
			return []string{"spec", "template", kind, "spec", "template"}, "", nil
		}
	}
	return nil, "", fmt.Errorf("%s has no subset template: set one of spec.template.statefulSetTemplate, deploymentTemplate or tappTemplate", ref)
}

// AsUnitedDeployment decodes a UnitedDeployment read through the dynamic client.
func AsUnitedDeployment(obj *unstructured.Unstructured) (*v1alpha1.UnitedDeployment, error) {
	return as[v1alpha1.UnitedDeployment](obj)
}

func unitedDeploymentStatus(obj *unstructured.Unstructured) (RolloutStatus, error) {
	var ud v1alpha1.UnitedDeployment
	if err := fromUnstructured(obj, &ud); err != nil {
		return RolloutStatus{}, err
	}
	st := ud.Status
	replicas := v1alpha1.ReplicasOrDefault(ud.Spec.Replicas)
	width := 0
	for _, s := range st.SubsetStatuses {
		width = max(width, len(s.Name))
	}
	f := fleetOf(&ud) // fleet.go: nil without clusters
	var progress, held []string
	// waiting: some subset has pods it may update but has not yet (beyond its partition).
	waiting := false
	for _, s := range st.SubsetStatuses {
		line := fmt.Sprintf("%-*s  %d/%d ready  %d/%d updated", width, s.Name, s.ReadyReplicas, s.Replicas, s.UpdatedReplicas, s.Replicas)
		if s.Partition > 0 {
			line += fmt.Sprintf("  partition %d", s.Partition)
			if s.UpdatedReplicas < s.Replicas {
				held = append(held, fmt.Sprintf("%s=%d", s.Name, s.Partition))
			}
		}
		if s.UpdatedReplicas < s.Replicas-s.Partition {
			waiting = true
		}
		progress = append(progress, line+f.subsetLine(s.Name))
	}
	if ud.Generation > st.ObservedGeneration || st.ObservedGeneration == 0 {
		return staleStatus(agentName, ud.Generation, st.ObservedGeneration, progress), nil
	}
	revision := ""
	if st.UpdatedRevision != "" {
		revision = " (revision " + st.UpdatedRevision + ")"
	}
	counts := fmt.Sprintf("%d of %s updated%s, %d ready", st.UpdatedReplicas, plural(replicas, "pod", "pods"), revision, st.ReadyReplicas)
	if c := trueCondition(st.Conditions, v1alpha1.SubsetFailure); c != nil {
		return status(StateDegraded, fmt.Sprintf("%s: %s; %s", c.Reason, c.Message, counts), progress), nil
	}
	complete := st.Replicas == replicas && st.UpdatedReplicas >= replicas && st.UpdatedReadyReplicas >= replicas && st.ReadyReplicas >= replicas
	if out := f.unreachable(); len(out) > 0 {
		// The counts of a member out of reach are the last ones seen: nothing is known to be
		// complete, or held, until it is back.
		return status(StateProgressing, strings.Join(out, "; ")+"; "+counts+" as last seen", progress), nil
	}
	switch {
	case complete:
		return status(StateComplete, counts, progress), nil
	case ud.Spec.UpdateStrategy.Paused:
		return status(StatePaused, "updates paused; "+counts, progress), nil
	case len(held) > 0 && !waiting && st.Replicas == replicas && st.ReadyReplicas >= replicas:
		return status(StatePaused, fmt.Sprintf("held by partitions %s; %s", strings.Join(held, ", "), counts), progress), nil
	}
	return status(StateProgressing, counts, progress), nil
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
	f := fleetOf(&ud) // fleet.go
	var hub []*Node
	// The hub holds no workload of a member's subset: with every subset in a member, there is
	// nothing to list here.
	if f == nil || len(f.refs) < len(ud.Spec.Topology.Subsets) {
		var err error
		if hub, err = t.hubSubsetNodes(&ud, kind); err != nil {
			return nil, err
		}
	}
	if f == nil {
		root.Children = hub
		return root, nil
	}
	root.Children = f.clusterTree(kind, hub)
	return root, nil
}

// hubSubsetNodes are the lines of a UnitedDeployment's subset workloads in this cluster, with
// their pods.
func (t *treeReader) hubSubsetNodes(ud *v1alpha1.UnitedDeployment, kind Kind) ([]*Node, error) {
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
	var out []*Node
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
		out = append(out, n)
	}
	return out, nil
}

// subsetLister is a kind a UnitedDeployment's subsets may be.
type subsetLister interface {
	// subsetWorkloads lists the subset workloads matching opts: TApps through the dynamic
	// client (as *unstructured.Unstructured), native ones typed.
	subsetWorkloads(t *treeReader, opts metav1.ListOptions) ([]metav1.Object, error)
}

// subsetWorkloads lists a UnitedDeployment's subset workloads by its label.
func (t *treeReader) subsetWorkloads(kind Kind, ud string) ([]metav1.Object, error) {
	l, ok := kind.helper.(subsetLister)
	if !ok {
		return nil, fmt.Errorf("no subset workloads of kind %s", kind.Name)
	}
	return l.subsetWorkloads(t, metav1.ListOptions{LabelSelector: labels.Set{v1alpha1.LabelUnitedDeploymentName: ud}.String()})
}

func setSubsetPartitions(ref Ref, obj *unstructured.Unstructured, args []string) (Change, error) {
	ud, err := AsUnitedDeployment(obj)
	if err != nil {
		return Change{}, err
	}
	if len(args) == 0 {
		return Change{}, fmt.Errorf("%s: give partitions as SUBSET=N …; its subsets are %s", ref, strings.Join(SubsetNames(ud), ", "))
	}
	replicas := map[string]int32{}
	for _, s := range ud.Status.SubsetStatuses {
		replicas[s.Name] = s.Replicas
	}
	current := partition.Subsets(ud)
	want := map[string]int32{}
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			return Change{}, fmt.Errorf("%s: %q is not SUBSET=N; its subsets are %s", ref, a, strings.Join(SubsetNames(ud), ", "))
		}
		if !HasSubset(ud, name) {
			return Change{}, UnknownSubsetError(ref, ud, name)
		}
		if _, dup := want[name]; dup {
			return Change{}, fmt.Errorf("%s: subset %s is given twice", ref, name)
		}
		n, ok := parsePartition(value)
		if !ok {
			return Change{}, fmt.Errorf("%s: %q is not a partition for subset %s: give a non-negative integer", ref, value, name)
		}
		if n > 0 && ud.Spec.Template.DeploymentTemplate != nil {
			return Change{}, fmt.Errorf("%s runs Deployment subsets, which cannot keep pods on an old revision: only partition 0 is allowed (hold the rollout with `kubectl workload pause %s`)", ref, ref)
		}
		// The agent caps a partition at the subset's replicas; refuse what it would ignore. A
		// subset the agent has not provisioned yet (no status) is checked against the
		// UnitedDeployment's replicas only.
		if r, known := replicas[name]; known && n > r {
			return Change{}, fmt.Errorf("%s: partition %d for subset %s is above its replicas (%d): use 0 to %d", ref, n, name, r, r)
		}
		if total := v1alpha1.ReplicasOrDefault(ud.Spec.Replicas); n > total {
			return Change{}, fmt.Errorf("%s: partition %d for subset %s is above the replicas of the whole UnitedDeployment (%d)", ref, n, name, total)
		}
		want[name] = n
	}
	set := map[string]int32{}
	for name, n := range want {
		if current[name] != n {
			set[name] = n
		}
	}
	if len(set) == 0 {
		return Unchanged(ref, "%s: partitions are already %s", ref, assignments(want)), nil
	}
	p, err := PartitionsPatch(set)
	if err != nil {
		return Change{}, err
	}
	var changes []string
	for _, name := range sortedKeys(set) {
		changes = append(changes, fmt.Sprintf("%s=%d (was %d)", name, set[name], current[name]))
	}
	return Change{Ref: ref, Patch: &p, Line: fmt.Sprintf("%s partitions set: %s", ref, strings.Join(changes, ", "))}, nil
}

// SubsetNames lists a UnitedDeployment's subsets in the order of spec.topology.subsets.
func SubsetNames(ud *v1alpha1.UnitedDeployment) []string {
	var out []string
	for _, s := range ud.Spec.Topology.Subsets {
		out = append(out, s.Name)
	}
	return out
}

// UnknownSubsetError is the one-line error for a subset name a UnitedDeployment does not have.
func UnknownSubsetError(ref Ref, ud *v1alpha1.UnitedDeployment, name string) error {
	return fmt.Errorf("%s has no subset %q: its subsets are %s", ref, name, fleetOf(ud).subsetsPhraseIn(SubsetNames(ud))) // fleet.go
}

// HasSubset reports whether a UnitedDeployment lists a subset of that name.
func HasSubset(ud *v1alpha1.UnitedDeployment, name string) bool {
	for _, s := range ud.Spec.Topology.Subsets {
		if s.Name == name {
			return true
		}
	}
	return false
}
