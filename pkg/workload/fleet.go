package workload

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A UnitedDeployment's subset may name a member cluster (spec.topology.subsets[].clusterProfileRef):
// its workload then runs there, created by the agent on the hub. The plugin talks to the hub
// only, so what it shows of a member is what the UnitedDeployment's status says
// (subsetStatuses[].cluster and the counts the agent last read); docs/fleet.md.

// hubCluster is the name the plugin gives the agent's own cluster beside member clusters.
const hubCluster = "(hub)"

// fleet is what a UnitedDeployment says of its clusters: each subset's ClusterProfile and its
// last status.
type fleet struct {
	ud       *v1alpha1.UnitedDeployment
	refs     map[string]*v1alpha1.ClusterProfileReference
	statuses map[string]v1alpha1.SubsetStatus
}

// fleetOf is the fleet of a UnitedDeployment, nil when none of its subsets names a cluster (the
// output is then what it was before clusters).
func fleetOf(ud *v1alpha1.UnitedDeployment) *fleet {
	if ud == nil {
		return nil
	}
	f := &fleet{ud: ud, refs: map[string]*v1alpha1.ClusterProfileReference{}, statuses: map[string]v1alpha1.SubsetStatus{}}
	for _, s := range ud.Spec.Topology.Subsets {
		if s.ClusterProfileRef != nil {
			f.refs[s.Name] = s.ClusterProfileRef
		}
	}
	if len(f.refs) == 0 {
		return nil
	}
	for _, s := range ud.Status.SubsetStatuses {
		f.statuses[s.Name] = s
	}
	return f
}

// clusterKey is a ClusterProfile's namespace/name, as status.subsetStatuses[].cluster names it.
func clusterKey(r *v1alpha1.ClusterProfileReference) string {
	return r.Namespace + "/" + r.Name
}

// clusterName is the short name of a subset's cluster: its ClusterProfile's name, or (hub).
func (f *fleet) clusterName(subset string) string {
	if r := f.refs[subset]; r != nil {
		return r.Name
	}
	return hubCluster
}

// clusters lists the clusters in the order their first subset appears in the topology, each with
// its subsets; the hub's own subsets, if any, come last.
func (f *fleet) clusters() (keys []string, subsets map[string][]string, refs map[string]*v1alpha1.ClusterProfileReference) {
	subsets, refs = map[string][]string{}, map[string]*v1alpha1.ClusterProfileReference{}
	var hub []string
	for _, s := range f.ud.Spec.Topology.Subsets {
		r := f.refs[s.Name]
		if r == nil {
			hub = append(hub, s.Name)
			continue
		}
		k := clusterKey(r)
		if _, seen := subsets[k]; !seen {
			keys = append(keys, k)
			refs[k] = r
		}
		subsets[k] = append(subsets[k], s.Name)
	}
	if len(hub) > 0 {
		keys = append(keys, hubCluster)
		subsets[hubCluster] = hub
	}
	return keys, subsets, refs
}

// clusterState is what the agent last reported of a subset's member: observed is false before
// any report.
type clusterState struct {
	observed, reachable bool
	message, lastSeen   string
}

// state is the last report on the member of a subset with a cluster.
func (f *fleet) state(subset string) clusterState {
	st, ok := f.statuses[subset]
	if !ok || st.Cluster == nil {
		return clusterState{}
	}
	c := clusterState{observed: true, reachable: st.Cluster.Reachable, message: st.Cluster.Message}
	if st.Cluster.LastSeenTime != nil {
		c.lastSeen = duration.HumanDuration(Now().Sub(st.Cluster.LastSeenTime.Time)) + " ago"
	}
	return c
}

// phrase says in a few words how a member stands: "reachable", "unreachable: MESSAGE (last seen
// 5m ago)", "not reported by the agent yet".
func (c clusterState) phrase() string {
	switch {
	case !c.observed:
		return "not reported by the agent yet"
	case c.reachable:
		return "reachable"
	}
	s := "unreachable"
	if c.message != "" {
		s += ": " + c.message
	}
	if c.lastSeen != "" {
		s += " (last seen " + c.lastSeen + ")"
	} else {
		s += " (never seen)"
	}
	return s
}

// word is the tree's STATUS of a cluster line.
func (c clusterState) word() string {
	switch {
	case !c.observed:
		return "Unknown"
	case c.reachable:
		return "Reachable"
	}
	return "Unreachable"
}

// subsetLine is the status progress suffix of a subset with a cluster: "  cluster ns/name
// unreachable: …"; "" for a subset of the hub.
func (f *fleet) subsetLine(subset string) string {
	if f == nil || f.refs[subset] == nil {
		return ""
	}
	c := f.state(subset)
	s := "  cluster " + clusterKey(f.refs[subset])
	if c.reachable {
		return s
	}
	return s + " " + c.phrase()
}

// unreachable lists the members not known to be reachable, "ns/name: why", once each.
func (f *fleet) unreachable() []string {
	if f == nil {
		return nil
	}
	keys, subsets, _ := f.clusters()
	var out []string
	for _, k := range keys {
		if k == hubCluster {
			continue
		}
		if c := f.state(subsets[k][0]); !c.reachable {
			out = append(out, "cluster "+k+" "+c.phrase())
		}
	}
	return out
}

// subsetsPhraseIn names subsets with their clusters, for messages: "eu-1 (cluster
// fleet-system/eu-1), zone-a".
func (f *fleet) subsetsPhraseIn(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if f != nil && f.refs[n] != nil {
			out[i] += " (cluster " + clusterKey(f.refs[n]) + ")"
		}
	}
	return strings.Join(out, ", ")
}

// subsetPhase is the one word of a member subset's line, from the counts the agent last read.
func subsetPhase(s v1alpha1.SubsetStatus, c clusterState) string {
	switch {
	case !c.reachable:
		return "Unknown"
	case s.UpdatedReplicas >= s.Replicas && s.ReadyReplicas >= s.Replicas:
		return string(StateComplete)
	case s.Partition > 0 && s.UpdatedReplicas >= s.Replicas-s.Partition:
		return string(StatePaused)
	}
	return string(StateProgressing)
}

// memberSubsetNode is the line of a subset whose workload runs in a member: drawn from the
// UnitedDeployment's status, since the plugin does not talk to members.
func (f *fleet) memberSubsetNode(kind Kind, subset string) *Node {
	n := &Node{Name: "subset " + subset}
	s, ok := f.statuses[subset]
	if !ok {
		n.Info = kind.Name + " in the member, not provisioned yet"
		return n
	}
	c := f.state(subset)
	n.Ready = fmt.Sprintf("%d/%d", s.ReadyReplicas, s.Replicas)
	n.Status = subsetPhase(s, c)
	n.Info = fmt.Sprintf("%s in the member, %d/%d updated", kind.Name, s.UpdatedReplicas, s.Replicas)
	if s.Partition > 0 {
		n.Info += fmt.Sprintf(", partition %d", s.Partition)
	}
	if !c.reachable && c.observed {
		n.Info += ", counts as last seen"
	}
	return n
}

// clusterNode is the line of a member cluster, from the first subset's report on it.
func (f *fleet) clusterNode(key string, ref *v1alpha1.ClusterProfileReference, subsets []string) *Node {
	if ref == nil {
		return &Node{Name: "cluster " + hubCluster, Info: "the agent's own cluster"}
	}
	c := f.state(subsets[0])
	n := &Node{Name: "cluster " + ref.Name, Status: c.word(), Info: "ClusterProfile " + key}
	switch {
	case c.reachable && c.lastSeen != "":
		n.Info += ", last seen " + c.lastSeen
	case !c.reachable:
		n.Info += ", " + c.phrase()
	}
	return n
}

// clusterTree puts subset lines under their clusters: the lines of the hub's own subset workloads
// (hub, read from the hub with their pods) under "cluster (hub)", the members' subsets drawn from
// the status.
func (f *fleet) clusterTree(kind Kind, hub []*Node) []*Node {
	keys, subsets, refs := f.clusters()
	var out []*Node
	for _, k := range keys {
		n := f.clusterNode(k, refs[k], subsets[k])
		if k == hubCluster {
			n.Children = hub
			hub = nil
		} else {
			for _, s := range subsets[k] {
				n.Children = append(n.Children, f.memberSubsetNode(kind, s))
			}
		}
		out = append(out, n)
	}
	if len(hub) > 0 {
		// Subset workloads on the hub whose subset now names a cluster (left from before).
		out = append(out, &Node{Name: "cluster " + hubCluster, Info: "the agent's own cluster", Children: hub})
	}
	return out
}

// waveSubsets are the subsets step k (from 1) of a Canary releasing a UnitedDeployment adds to
// the release: those steps[k-1] names, or for the final step the agent adds after the last step
// that leaves subsets out, those no step names. Nil for a step of replicas.
func waveSubsets(c *v1alpha1.Canary, ud *v1alpha1.UnitedDeployment, k int32) []string {
	if k < 1 {
		return nil
	}
	if int(k) <= len(c.Spec.Steps) {
		return c.Spec.Steps[k-1].Subsets
	}
	if ud == nil || len(c.Spec.Steps) == 0 || len(c.Spec.Steps[len(c.Spec.Steps)-1].Subsets) == 0 {
		return nil // the step the agent adds is "every subset left": the UnitedDeployment says which
	}
	named := map[string]bool{}
	for _, s := range c.Spec.Steps {
		for _, n := range s.Subsets {
			named[n] = true
		}
	}
	var rest []string
	for _, n := range SubsetNames(ud) {
		if !named[n] {
			rest = append(rest, n)
		}
	}
	return rest
}

// waveClusters names the clusters of a wave's subsets, in order: "eu-1, us-1", with the subset
// in parentheses when its name is not its cluster's ("eu-1 (subset eu-west)"), and a subset of
// the hub as "zone-a (hub)".
func (f *fleet) waveClusters(subsets []string) string {
	var out []string
	for _, s := range subsets {
		switch name := f.clusterName(s); {
		case f.refs[s] == nil:
			out = append(out, s+" "+hubCluster)
		case name != s:
			out = append(out, name+" (subset "+s+")")
		default:
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}

// heldBy lists the members of waves 1..k that are not reachable: the release does not count
// step k as passed while one of them is out of reach.
func (f *fleet) heldBy(c *v1alpha1.Canary, k int32) []stepDetail {
	var out []stepDetail
	seen := map[string]bool{}
	for i := int32(1); i <= k; i++ {
		for _, s := range waveSubsets(c, f.ud, i) {
			r := f.refs[s]
			if r == nil || seen[clusterKey(r)] {
				continue
			}
			seen[clusterKey(r)] = true
			if st := f.state(s); !st.reachable {
				out = append(out, stepDetail{name: "cluster " + r.Name, verdict: st.word(),
					info: strings.TrimPrefix(st.phrase(), "unreachable: ") + "; the step waits for it"})
			}
		}
	}
	return out
}

// udOf is the UnitedDeployment of a fleet, nil for none.
func udOf(f *fleet) *v1alpha1.UnitedDeployment {
	if f == nil {
		return nil
	}
	return f.ud
}

// fleetHold is what the status line adds when members out of reach hold the current step:
// "; step 2 waits for cluster us-1 (unreachable)"; "" otherwise.
func fleetHold(c *v1alpha1.Canary, f *fleet) string {
	if f == nil || c.Spec.Rollback {
		return ""
	}
	switch c.Status.Phase {
	case v1alpha1.CanaryCompleted, v1alpha1.CanaryRollingBack, v1alpha1.CanaryRolledBack:
		return ""
	}
	var names []string
	for _, d := range f.heldBy(c, c.Status.CurrentBatch) {
		names = append(names, d.name+" ("+strings.ToLower(d.verdict)+")")
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s %d waits for %s", stepWord(c), c.Status.CurrentBatch, strings.Join(names, ", "))
}

// TargetStatusViewer is a StatusViewer whose status says more with the object's target read
// too: a Canary releasing a UnitedDeployment by subsets names each wave's clusters.
type TargetStatusViewer interface {
	StatusWithTarget(ctx context.Context, client dynamic.Interface, namespace string, obj *unstructured.Unstructured) (RolloutStatus, error)
}

// StatusWithTarget reads the UnitedDeployment a Canary releases by subsets (steps[].subsets) to
// name the clusters of its waves; any other Canary's status is Status's, without a read. A
// target that is gone or not for this user to read leaves the clusters out.
func (canaryKind) StatusWithTarget(ctx context.Context, client dynamic.Interface, namespace string, obj *unstructured.Unstructured) (RolloutStatus, error) {
	c, err := AsCanary(obj)
	if err != nil || !releasesBySubsets(c) {
		return canaryStatus(obj)
	}
	u, err := client.Resource(UnitedDeployment.Resource).Namespace(namespace).Get(ctx, c.Spec.TargetRef.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return canaryStatus(obj)
	case err != nil:
		return RolloutStatus{}, fmt.Errorf("reading its target UnitedDeployment %q: %w", c.Spec.TargetRef.Name, err)
	}
	ud, err := AsUnitedDeployment(u)
	if err != nil {
		return RolloutStatus{}, err
	}
	return canaryFleetStatus(obj, ud)
}

// releasesBySubsets reports whether a Canary releases a UnitedDeployment subset by subset.
func releasesBySubsets(c *v1alpha1.Canary) bool {
	if c.Spec.TargetRef == nil || c.Spec.TargetRef.Kind != UnitedDeployment.Name {
		return false
	}
	for _, s := range c.Spec.Steps {
		if len(s.Subsets) > 0 {
			return true
		}
	}
	return false
}

// targetFleet is the fleet of the UnitedDeployment a Canary releases by subsets, from the
// target's tree lines already read (nil for any other Canary).
func targetFleet(c *v1alpha1.Canary, target []*Node) *fleet {
	if !releasesBySubsets(c) || len(target) == 0 {
		return nil
	}
	u, ok := target[0].Object.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	ud, err := AsUnitedDeployment(u)
	if err != nil {
		return nil
	}
	return fleetOf(ud)
}

// awayNote is what a change to subsets adds when some of their members are out of reach: the
// agent writes the change there once the member is back. "" when all are reachable.
func (f *fleet) awayNote(subsets []string) string {
	if f == nil {
		return ""
	}
	var away []string
	for _, s := range subsets {
		if f.refs[s] != nil && !f.state(s).reachable {
			away = append(away, f.clusterName(s))
		}
	}
	if len(away) == 0 {
		return ""
	}
	return fmt.Sprintf("; cluster %s out of reach: the agent writes it there when the member is back", strings.Join(away, ", "))
}

// ClustersOf is the CLUSTERS cell of `list`: "reachable/clusters" of a UnitedDeployment whose
// subsets name member clusters ("1/2"), "" for any other object.
func ClustersOf(k Kind, obj *unstructured.Unstructured) string {
	if k.Name != UnitedDeployment.Name {
		return ""
	}
	ud, err := AsUnitedDeployment(obj)
	if err != nil {
		return ""
	}
	f := fleetOf(ud)
	if f == nil {
		return ""
	}
	keys, subsets, _ := f.clusters()
	total, reachable := 0, 0
	for _, key := range keys {
		if key == hubCluster {
			continue
		}
		total++
		if f.state(subsets[key][0]).reachable {
			reachable++
		}
	}
	return fmt.Sprintf("%d/%d", reachable, total)
}
