package canary

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	informers "github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

// A UnitedDeployment target is released through its per-subset partitions
// (spec.updateStrategy.manualUpdate.partitions: the pods of a subset kept on the old revision),
// which the UnitedDeployment controller passes to each subset's StatefulSet or TApp. A step
// either counts pods, released subset by subset in the order the steps named them, then
// topology order, or names the subsets it releases (zone by zone): a subset no step has named
// yet keeps every pod on the stable revision. Its revisions are the UnitedDeployment's own
// ControllerRevisions, whose data holds spec.template.

const kindUnitedDeployment = "UnitedDeployment"

// watchUnitedDeployments makes UnitedDeployments targets of Canaries, read from the agent's
// shared informer (the UnitedDeployment controller caches them all already).
func (c *Controller) watchUnitedDeployments(inf informers.UnitedDeploymentInformer) error {
	c.setTargetKind(kindUnitedDeployment, unitedDeploymentKind{lister: inf.Lister()})
	return c.Watch(inf.Informer(), c.targetHandler(kindUnitedDeployment))
}

// unitedDeploymentKind is the UnitedDeployment targetKind over a lister.
type unitedDeploymentKind struct {
	listedKind
	lister listers.UnitedDeploymentLister
}

func (k unitedDeploymentKind) get(_ context.Context, namespace, name string) (targetWorkload, error) {
	wrap := func(ud *v1alpha1.UnitedDeployment) targetWorkload { return unitedDeploymentTarget{ud} }
	return found(wrap)(k.lister.UnitedDeployments(namespace).Get(name))
}

// unitedDeploymentTarget is a targeted UnitedDeployment as one sync read it.
type unitedDeploymentTarget struct{ *v1alpha1.UnitedDeployment }

func (t unitedDeploymentTarget) state() targetState {
	ud := t.UnitedDeployment
	var held int32
	for _, s := range ud.Spec.Topology.Subsets {
		held += min(partition.Subset(ud, s.Name), t.subsetReplicas(s.Name))
	}
	// The pods of a subset whose member cluster is unreachable are the last counts seen: they
	// are not counted, so a step that needs them never completes while it stays unreachable
	// (docs/architecture.md, "Fleet: member clusters").
	var unseenUpdated, unseenReady int32
	for _, s := range ud.Status.SubsetStatuses {
		if s.Cluster != nil && !s.Cluster.Reachable {
			unseenUpdated += s.UpdatedReplicas
			unseenReady += s.ReadyReplicas
		}
	}
	return targetState{
		observed: ud.Status.ObservedGeneration >= ud.Generation,
		replicas: v1alpha1.ReplicasOrDefault(ud.Spec.Replicas),
		updated:  max(0, ud.Status.UpdatedReplicas-unseenUpdated),
		// Its status counts ready pods only: a ready pod is taken as available.
		available:       max(0, ud.Status.ReadyReplicas-unseenReady),
		ready:           max(0, ud.Status.ReadyReplicas-unseenReady),
		updateRevision:  ud.Status.UpdatedRevision,
		currentRevision: ud.Status.CurrentRevision,
		held:            held,
	}
}

// unreachable names the subsets whose member cluster is unreachable, and why: the release
// holds for them (their pods are not counted) until they come back or the deadline passes.
func (t unitedDeploymentTarget) unreachable() string {
	var held []string
	for _, s := range t.Status.SubsetStatuses {
		if c := s.Cluster; c != nil && !c.Reachable {
			why := fmt.Sprintf("subset %s in cluster %s", s.Name, c.ClusterProfile)
			if c.Message != "" {
				why += " (" + c.Message + ")"
			}
			held = append(held, why)
		}
	}
	if len(held) == 0 {
		return ""
	}
	return "held while unreachable: " + strings.Join(held, "; ")
}

// clusterWaves names the member clusters of the subsets the steps up to step named (released)
// and of the others (never released), each once, in topology order; none when no step names
// a subset in a member cluster.
func (t unitedDeploymentTarget) clusterWaves(cn *v1alpha1.Canary, step int32) (released, never []string) {
	named, waves := map[string]bool{}, false
	for i, s := range cn.Spec.Steps {
		for _, name := range s.Subsets {
			if int32(i) < step {
				named[name] = true
			}
			waves = waves || t.clusterOf(name) != ""
		}
	}
	if !waves {
		return nil, nil
	}
	// A cluster with a released subset is released, whatever its other subsets.
	for _, s := range t.Spec.Topology.Subsets {
		if c := t.clusterOf(s.Name); c != "" && named[s.Name] && !slices.Contains(released, c) {
			released = append(released, c)
		}
	}
	for _, s := range t.Spec.Topology.Subsets {
		if c := t.clusterOf(s.Name); c != "" && !slices.Contains(released, c) && !slices.Contains(never, c) {
			never = append(never, c)
		}
	}
	return released, never
}

// clusterOf is the name of a subset's member cluster (its ClusterProfile's), "" on the hub.
func (t unitedDeploymentTarget) clusterOf(subset string) string {
	for _, s := range t.Spec.Topology.Subsets {
		if s.Name == subset && s.ClusterProfileRef != nil {
			return s.ClusterProfileRef.Name
		}
	}
	return ""
}

// subsetReplicas is the pods the UnitedDeployment controller allocated to a subset.
func (t unitedDeploymentTarget) subsetReplicas(name string) int32 {
	for _, s := range t.Status.SubsetStatuses {
		if s.Name == name {
			return s.Replicas
		}
	}
	return 0
}

func (t unitedDeploymentTarget) unsupported() string {
	tpl := t.Spec.Template
	switch {
	case tpl.DeploymentTemplate != nil:
		return fmt.Sprintf("UnitedDeployment %q runs Deployment subsets, which cannot keep part of their pods on the old revision: a Canary releases StatefulSet or TApp subsets through their partitions", t.Name)
	case tpl.StatefulSetTemplate != nil && tpl.StatefulSetTemplate.Spec.UpdateStrategy.Type == "OnDelete":
		return fmt.Sprintf("UnitedDeployment %q runs StatefulSet subsets with updateStrategy OnDelete: a Canary releases them through the RollingUpdate partition; set it to RollingUpdate", t.Name)
	case t.Spec.UpdateStrategy.Paused:
		return fmt.Sprintf("UnitedDeployment %q has updateStrategy.paused: none of its subsets would move; unpause it and the Canary holds it through its partitions", t.Name)
	}
	return ""
}

// countSteps sets the pods of the steps that name subsets: every pod of the subsets named so
// far. When the last step leaves subsets out, a final step of every pod follows.
func (t unitedDeploymentTarget) countSteps(cn *v1alpha1.Canary, steps *[]step) string {
	var names []string
	for _, s := range t.Spec.Topology.Subsets {
		names = append(names, s.Name)
	}
	released := map[string]bool{}
	var pods int32
	for i := range *steps {
		s := &(*steps)[i]
		if len(s.subsets) == 0 {
			continue
		}
		for _, name := range s.subsets {
			if !slices.Contains(names, name) {
				return fmt.Sprintf("steps[%d].subsets names %q, which is not a subset of UnitedDeployment %q (its subsets: %s)",
					i, name, t.Name, strings.Join(names, ", "))
			}
			if !released[name] {
				released[name] = true
				pods += t.subsetReplicas(name)
			}
		}
		s.canaryReplicas = pods
	}
	if last := (*steps)[len(*steps)-1]; len(last.subsets) > 0 && len(released) < len(names) {
		*steps = append(*steps, step{canaryReplicas: cn.Spec.Replicas})
	}
	return ""
}

// partitions are the per-subset partitions that keep held pods on the current revision at step
// k: the released pods fill the subsets named by steps 1..k, in that order, then the others in
// topology order.
func (t unitedDeploymentTarget) partitions(cn *v1alpha1.Canary, held, k int32) map[string]int32 {
	var order []string
	for i := 0; i < int(k) && i < len(cn.Spec.Steps); i++ {
		for _, name := range cn.Spec.Steps[i].Subsets {
			if !slices.Contains(order, name) {
				order = append(order, name)
			}
		}
	}
	for _, s := range t.Spec.Topology.Subsets {
		if !slices.Contains(order, s.Name) {
			order = append(order, s.Name)
		}
	}
	released := max(0, v1alpha1.ReplicasOrDefault(t.Spec.Replicas)-held)
	out := map[string]int32{}
	for _, name := range order {
		n := t.subsetReplicas(name)
		r := min(n, released)
		released -= r
		out[name] = n - r
	}
	return out
}

func (t unitedDeploymentTarget) write(ctx context.Context, c *Controller, cn *v1alpha1.Canary, w targetWrite) (string, error) {
	if w.kind == restoreTemplate {
		if err := c.restoreUnitedDeployment(ctx, t.UnitedDeployment, w.revision); err != nil {
			return "", fmt.Errorf("writing the template of revision %s back to UnitedDeployment %q: %w", w.revision, t.Name, err)
		}
		return fmt.Sprintf("wrote the template of revision %s back to UnitedDeployment %q (%s)", w.revision, t.Name, w.reason), nil
	}
	parts := t.partitions(cn, w.partition, w.step)
	patch, err := partition.SubsetsPatch(parts)
	if err != nil {
		return "", err
	}
	if _, err := c.client.AppsV1alpha1().UnitedDeployments(t.Namespace).Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("setting the partitions of UnitedDeployment %q: %w", t.Name, err)
	}
	var each []string
	for _, s := range t.Spec.Topology.Subsets {
		each = append(each, fmt.Sprintf("%s %d", s.Name, parts[s.Name]))
	}
	return fmt.Sprintf("set the partitions of UnitedDeployment %q (pods kept on revision %s per subset): %s",
		t.Name, t.Status.CurrentRevision, strings.Join(each, ", ")), nil
}

// restoreUnitedDeployment writes the template a ControllerRevision of ud recorded back to ud,
// whole (revisiondata: a merge patch would keep fields the newer template added).
func (c *Controller) restoreUnitedDeployment(ctx context.Context, ud *v1alpha1.UnitedDeployment, name string) error {
	data, err := c.revisionTemplates(ctx, ud, kindUnitedDeployment, name)
	if err != nil {
		return err
	}
	patch, err := data.RestorePatch(false)
	if err != nil {
		return err
	}
	_, err = c.client.AppsV1alpha1().UnitedDeployments(ud.Namespace).Patch(ctx, ud.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

// revisionTemplates are the templates a ControllerRevision of owner (a TApp or
// UnitedDeployment) records, read from the API server and checked to be owner's.
func (c *Controller) revisionTemplates(ctx context.Context, owner metav1.Object, kind, name string) (revisiondata.Data, error) {
	rev, err := c.ownedRevision(ctx, owner, kind, name)
	if err != nil {
		return revisiondata.Data{}, err
	}
	data, err := revisiondata.Decode(rev.Data.Raw)
	if err != nil {
		return revisiondata.Data{}, fmt.Errorf("ControllerRevision %q holds no spec.template of a %s (%v): was it written by the agent?", name, kind, err)
	}
	return data, nil
}

func (unitedDeploymentKind) latest(ctx context.Context, c *Controller, namespace, name string) (heldWorkload, error) {
	return found(func(ud *v1alpha1.UnitedDeployment) heldWorkload { return heldUnitedDeployment{ud} })(
		c.client.AppsV1alpha1().UnitedDeployments(namespace).Get(ctx, name, metav1.GetOptions{}))
}

// heldUnitedDeployment is held by its partitions: dropped when no release is under way, so that
// the UnitedDeployment updates its subsets by itself again; mid-release they stay.
type heldUnitedDeployment struct{ *v1alpha1.UnitedDeployment }

func (u heldUnitedDeployment) held() bool {
	return len(partition.Subsets(u.UnitedDeployment)) > 0
}

func (u heldUnitedDeployment) midRelease() string {
	if u.Status.UpdatedRevision == u.Status.CurrentRevision {
		return ""
	}
	return fmt.Sprintf("UnitedDeployment %q keeps its partitions (%d pods on revision %s); lower them to finish or restore its template to undo",
		u.Name, u.Status.UpdatedReplicas, u.Status.UpdatedRevision)
}

func (u heldUnitedDeployment) unhold(ctx context.Context, c *Controller) (string, error) {
	_, err := c.client.AppsV1alpha1().UnitedDeployments(u.Namespace).Patch(ctx, u.Name, types.MergePatchType, partition.ClearSubsetsPatch(), metav1.PatchOptions{})
	return fmt.Sprintf("UnitedDeployment %q is no longer held (its partitions removed) and updates its subsets by itself again", u.Name), err
}

// updatePods selects its pods of the update revision, in every subset: the UnitedDeployment
// controller labels them with the revision their subset workload was made from. They carry the
// managed-by label: the agent's pod informer holds them.
func (t unitedDeploymentTarget) updatePods() (labels.Selector, bool) {
	return labels.SelectorFromSet(labels.Set{
		v1alpha1.LabelUnitedDeploymentName: t.Name,
		v1alpha1.LabelRevision:             t.Status.UpdatedRevision,
	}), true
}
