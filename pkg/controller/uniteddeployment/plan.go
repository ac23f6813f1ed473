package uniteddeployment

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
)

// defaultRevisionHistoryLimit applies when spec.revisionHistoryLimit is unset (the schema
// defaults it too).
const defaultRevisionHistoryLimit = 10

// failure is one thing that went wrong in a sync, for the SubsetFailure condition.
type failure struct {
	reason, message string
}

// plan is what a sync does before it knows the updated revision: computed from the
// observation alone (computePlan).
type plan struct {
	// blocked is a spec problem the user must fix (NoTemplate, InvalidReplicas): while it lasts
	// nothing is written but the status.
	blocked *failure
	// alloc is each listed subset's replicas; while blocked, the workloads' current replicas.
	alloc map[string]int32
	// revision finds or makes the revision of spec.template.
	revision revisionPlan
}

// revisionPlan says how to get the revision of spec.template (the updated revision).
type revisionPlan struct {
	// candidate is the revision to create: spec.template, numbered next, named for
	// collisionCount.
	candidate *appsv1.ControllerRevision
	// equal is the newest existing revision holding spec.template; nil when there is none and
	// candidate is created.
	equal *appsv1.ControllerRevision
	// latest is true when equal is the newest revision: nothing to write. Otherwise equal is
	// renumbered to candidate.Revision (the template came back to an older revision).
	latest bool
	// collisionCount is status.collisionCount, which a create may raise.
	collisionCount int32
	err            error
}

// computePlan allocates the replicas and plans the revision, or reports why it cannot.
func computePlan(obs *observation) *plan {
	ud := obs.ud
	p := &plan{}
	if obs.status.CollisionCount != nil {
		p.revision.collisionCount = *obs.status.CollisionCount
	}
	if obs.selected == nil {
		// The CRD refuses such a template; report it rather than guess.
		p.blocked = &failure{appsv1alpha1.ReasonNoTemplate, "spec.template sets none of statefulSetTemplate, deploymentTemplate and tappTemplate"}
		return p
	}
	current := map[string]int32{}
	for name, l := range obs.own {
		current[name] = l[0].Replicas
	}
	alloc, err := Allocate(appsv1alpha1.ReplicasOrDefault(ud.Spec.Replicas), ud.Spec.Topology.Subsets, current)
	if err != nil {
		// Change nothing: report, and wait for the user to fix the spec.
		p.alloc = current
		p.blocked = &failure{appsv1alpha1.ReasonInvalidReplicas, err.Error()}
		return p
	}
	p.alloc = alloc
	p.revision.plan(ud, obs.revisions)
	return p
}

// plan finds the revision of spec.template among revisions (sorted oldest first), or names the
// one to create.
func (rp *revisionPlan) plan(ud *appsv1alpha1.UnitedDeployment, revisions []*appsv1.ControllerRevision) {
	data, err := revisiondata.EncodeUnitedDeployment(&ud.Spec.Template)
	if err != nil {
		rp.err = err
		return
	}
	// managed-by: the agent's revision informer lists and watches only what carries it.
	labels := map[string]string{appsv1alpha1.LabelManagedBy: appsv1alpha1.ManagedByAgent, appsv1alpha1.LabelUnitedDeploymentName: ud.Name}
	rp.candidate = revision.New(ud, controllerKind, labels, data, revision.Next(revisions), &rp.collisionCount)
	if equal := revision.FindEqual(revisions, rp.candidate); len(equal) > 0 {
		rp.equal = equal[len(equal)-1]
		rp.latest = rp.equal == revisions[len(revisions)-1]
	}
}

// currentRevision is the revision named by status.currentRevision, or updated when there is
// none (a new UnitedDeployment, or one whose current revision is gone).
func currentRevision(obs *observation, updated string) string {
	for _, r := range obs.revisions {
		if r.Name == obs.status.CurrentRevision {
			return r.Name
		}
	}
	return updated
}

// subsetPlan is the writes to subset workloads and old revisions, computed from the
// observation once the updated revision is known (planSubsets).
type subsetPlan struct {
	kind workloadKind
	// members are the member clusters of the observation.
	members map[string]*memberState
	// specs is what each listed subset should be, in topology order.
	specs []*SubsetSpec
	// creates, updates and deletes are the workload writes, in the order they are made.
	creates []creation
	updates []update
	deletes []deletion
	// held lists, per reason (Paused, PartitionUnsupported), the subsets whose workload keeps
	// an older template.
	held map[string][]string
	// waiting lists workloads of a previous kind kept until their replacement is ready.
	waiting []string
	// failures are spec problems found on the way (PartitionUnsupported).
	failures []failure
	// oldRevisions are the revisions beyond spec.revisionHistoryLimit, oldest first.
	oldRevisions []*appsv1.ControllerRevision
}

// creation is a workload to create, by kind (the hub's or its member's).
type creation struct {
	kind workloadKind
	spec *SubsetSpec
	obj  metav1.Object
}

// update is a workload to write: obj is existing brought to spec, by kind.
type update struct {
	kind     workloadKind
	existing *Subset
	spec     *SubsetSpec
	obj      metav1.Object
}

// deletion is a workload to delete, and why.
type deletion struct {
	kind   workloadKind
	subset *Subset
	why    string
}

func (p *subsetPlan) hold(reason, subset string) {
	if p.held == nil {
		p.held = map[string][]string{}
	}
	p.held[reason] = append(p.held[reason], subset)
}

// planSubsets plans the subset workloads: one of the selected kind per listed subset, brought to
// its spec; duplicates, workloads of unlisted subsets and replaced workloads of other kinds
// deleted; old revisions pruned.
func planSubsets(obs *observation, alloc map[string]int32, current, updated string) *subsetPlan {
	p := &subsetPlan{kind: obs.selected, members: obs.members, specs: subsetSpecs(obs.ud, alloc, updated)}
	pods := countAll(obs, updated)
	kept := p.planOwn(obs, countPods(obs.pods, updated))
	p.holdMembers()
	p.planUnlisted(obs)
	p.planOthers(obs, kept, pods)
	p.planUpdates(obs.ud, kept)
	p.oldRevisions = oldRevisions(obs, current, updated)
	return p
}

// subsetSpecs is what each listed subset should be.
func subsetSpecs(ud *appsv1alpha1.UnitedDeployment, alloc map[string]int32, updated string) []*SubsetSpec {
	subsets := ud.Spec.Topology.Subsets
	specs := make([]*SubsetSpec, len(subsets))
	for i := range subsets {
		s := &subsets[i]
		specs[i] = &SubsetSpec{
			Subset:     s,
			Replicas:   alloc[s.Name],
			Partition:  partitionOf(ud, s.Name, alloc[s.Name]),
			Paused:     ud.Spec.UpdateStrategy.Paused,
			Revision:   updated,
			SubsetHash: subsetHash(s),
		}
	}
	return specs
}

// partitionOf is the partition of a subset: absent means 0, capped at the subset's replicas.
func partitionOf(ud *appsv1alpha1.UnitedDeployment, subset string, replicas int32) int32 {
	return min(partition.Subset(ud, subset), replicas)
}

// planOwn creates the workload of each listed subset that has none in its cluster and deletes
// all but the oldest of a subset that has several. A workload left in the subset's former
// cluster is deleted once the new one has its replicas ready. A subset whose member cannot be
// used this sync is held as it is. It returns the workload kept per subset.
func (p *subsetPlan) planOwn(obs *observation, hubPods *observedPods) map[string]*Subset {
	kept := map[string]*Subset{}
	for _, spec := range p.specs {
		name, cluster := spec.Subset.Name, clusterOf(spec.Subset)
		k := p.kindIn(cluster)
		if k == nil {
			continue
		}
		var here, moved []*Subset
		for _, s := range obs.own[name] {
			if s.Cluster == cluster {
				here = append(here, s)
			} else {
				moved = append(moved, s)
			}
		}
		if len(here) == 0 {
			p.creates = append(p.creates, creation{k, spec, k.Build(obs.ud, nil, spec)})
		} else {
			kept[name] = here[0]
			for _, dup := range here[1:] {
				p.deletes = append(p.deletes, deletion{k, dup, fmt.Sprintf("duplicate of %s %s of subset %s", k.Kind(), here[0].Object.GetName(), name)})
			}
		}
		for _, s := range moved {
			p.planMoved(s, kept[name], spec, hubPods)
		}
	}
	return kept
}

// holdMembers holds the subsets of the members that cannot be used this sync, and reports each
// such member once as a failure (not while its caches are still filling).
func (p *subsetPlan) holdMembers() {
	held := map[string][]string{}
	var clusters []string
	for _, spec := range p.specs {
		cluster := clusterOf(spec.Subset)
		if cluster == "" || p.kindIn(cluster) != nil {
			continue
		}
		reason := p.members[cluster].reason
		if reason == "" {
			reason = appsv1alpha1.ReasonClusterUnreachable
		}
		p.hold(reason, spec.Subset.Name)
		if held[cluster] == nil {
			clusters = append(clusters, cluster)
		}
		held[cluster] = append(held[cluster], spec.Subset.Name)
	}
	for _, cluster := range clusters {
		ms := p.members[cluster]
		if ms.reason != "" {
			p.failures = append(p.failures, failure{ms.reason, fmt.Sprintf("%s; subsets %s held as they are", ms.message, strings.Join(held[cluster], ", "))})
		}
	}
}

// kindIn is the selected kind's instance in a cluster ("" the hub), nil when the cluster's
// member cannot be used this sync: its subsets are then held with the member's reason.
func (p *subsetPlan) kindIn(cluster string) workloadKind {
	if cluster == "" {
		return p.kind
	}
	ms := p.members[cluster]
	if ms == nil || !ms.usable() || ms.selected == nil {
		return nil
	}
	return ms.selected
}

// planMoved deletes a subset's workload left in the cluster it ran in before, once the
// workload in its new cluster has every replica ready on the updated revision; until then it
// keeps serving. A workload in a member that cannot be used now waits for it.
func (p *subsetPlan) planMoved(s, kept *Subset, spec *SubsetSpec, hubPods *observedPods) {
	k := p.kindOf(s)
	where := "the hub"
	if s.Cluster != "" {
		where = "cluster " + s.Cluster
	}
	if k != nil && kept != nil && keptReady(kept, spec, hubPods) {
		p.deletes = append(p.deletes, deletion{k, s, fmt.Sprintf("subset %s moved from %s", spec.Subset.Name, where)})
		return
	}
	p.waiting = append(p.waiting, fmt.Sprintf("%s %s (subset %s, in %s)", p.kind.Kind(), s.Object.GetName(), spec.Subset.Name, where))
}

// keptReady reports whether a subset's workload has every replica ready on the updated
// revision: a member's by its own status, the hub's by its pods.
func keptReady(kept *Subset, spec *SubsetSpec, hubPods *observedPods) bool {
	if kept.Cluster != "" {
		return kept.Revision == spec.Revision && kept.Status.updatedReady >= spec.Replicas
	}
	return hubPods.subset(spec.Subset.Name).updatedReady >= spec.Replicas
}

// kindOf is the kind that writes a listed workload: the one that listed it, else (observations
// built by hand) the selected kind; nil when its member cannot be used this sync.
func (p *subsetPlan) kindOf(s *Subset) workloadKind {
	if s.Cluster != "" {
		if ms := p.members[s.Cluster]; ms == nil || !ms.usable() {
			return nil
		}
	}
	if s.kind != nil {
		return s.kind
	}
	return p.kind
}

// planUnlisted deletes the selected kind's workloads of subsets no longer listed.
func (p *subsetPlan) planUnlisted(obs *observation) {
	listed := sets.New[string]()
	for _, spec := range p.specs {
		listed.Insert(spec.Subset.Name)
	}
	var unlisted []string
	for name := range obs.own {
		if !listed.Has(name) {
			unlisted = append(unlisted, name)
		}
	}
	sort.Strings(unlisted)
	for _, name := range unlisted {
		for _, s := range obs.own[name] {
			if k := p.kindOf(s); k != nil {
				p.deletes = append(p.deletes, deletion{k, s, fmt.Sprintf("subset %q is no longer listed", name)})
			}
		}
	}
}

// planOthers deletes a workload of another kind once its subset is unlisted, or once the
// selected kind's workload of its subset has all its replicas ready on the updated revision;
// until then it keeps serving.
func (p *subsetPlan) planOthers(obs *observation, kept map[string]*Subset, pods *observedPods) {
	for _, o := range obs.others {
		name := o.subset.SubsetName
		spec := p.spec(name)
		switch {
		case spec == nil:
			p.deletes = append(p.deletes, deletion{o.kind, o.subset, fmt.Sprintf("subset %q is no longer listed", name)})
		case kept[name] != nil && pods.owner(name, p.kind.PodOwnerKind()).updatedReady >= spec.Replicas:
			p.deletes = append(p.deletes, deletion{o.kind, o.subset, fmt.Sprintf("replaced by %s %s", p.kind.Kind(), kept[name].Object.GetName())})
		default:
			p.waiting = append(p.waiting, fmt.Sprintf("%s %s (subset %s)", o.kind.Kind(), o.subset.Object.GetName(), name))
		}
	}
}

func (p *subsetPlan) spec(subset string) *SubsetSpec {
	for _, s := range p.specs {
		if s.Subset.Name == subset {
			return s
		}
	}
	return nil
}

// planUpdates brings each kept workload to its spec: the template only when its revision or
// subset hash differs and nothing holds it (pause; a partition the kind cannot honour), replicas,
// partition and pause always. A workload that already matches is not written.
func (p *subsetPlan) planUpdates(ud *appsv1alpha1.UnitedDeployment, kept map[string]*Subset) {
	for _, spec := range p.specs {
		name := spec.Subset.Name
		if !p.kind.Partitions() && spec.Partition > 0 {
			p.failures = append(p.failures, failure{appsv1alpha1.ReasonPartitionUnsupported, fmt.Sprintf(
				"subset %s runs a %s, which cannot keep part of its pods on an old revision: partition %d refused and the subset's template held; set its partition to 0 and use updateStrategy.paused to hold a rollout",
				name, p.kind.Kind(), spec.Partition)})
		}
		w := kept[name]
		if w == nil {
			continue
		}
		spec.ApplyTemplate = w.Revision != spec.Revision || w.SubsetHash != spec.SubsetHash
		if spec.ApplyTemplate && spec.Paused {
			spec.ApplyTemplate = false
			p.hold(appsv1alpha1.ReasonPaused, name)
		}
		if spec.ApplyTemplate && !p.kind.Partitions() && spec.Partition > 0 {
			spec.ApplyTemplate = false
			p.hold(appsv1alpha1.ReasonPartitionUnsupported, name)
		}
		k := p.kindOf(w)
		obj := k.Build(ud, w, spec)
		if !apiequality.Semantic.DeepEqual(w.Object, obj) {
			p.updates = append(p.updates, update{k, w, spec, obj})
		}
	}
}

// oldRevisions are the oldest revisions beyond spec.revisionHistoryLimit (default 10), never the
// current or updated revision nor one a subset workload still carries.
func oldRevisions(obs *observation, current, updated string) []*appsv1.ControllerRevision {
	live := sets.New(current, updated, obs.status.CurrentRevision)
	for _, l := range obs.own {
		for _, s := range l {
			live.Insert(s.Revision)
		}
	}
	for _, o := range obs.others {
		live.Insert(o.subset.Revision)
	}
	limit := defaultRevisionHistoryLimit
	if obs.ud.Spec.RevisionHistoryLimit != nil {
		limit = int(*obs.ud.Spec.RevisionHistoryLimit)
	}
	return revision.Excess(obs.revisions, live, limit)
}
