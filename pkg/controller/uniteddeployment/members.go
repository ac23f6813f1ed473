package uniteddeployment

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
)

// memberState is what one sync knows of a member cluster the UnitedDeployment's subsets name
// (or named: status.subsetStatuses keeps the cluster of a subset until its workload is gone).
type memberState struct {
	ref appsv1alpha1.ClusterProfileReference
	// kinds are the member's instances of the subset kinds it can list; selected the one
	// spec.template asks for, nil when the member cannot run it.
	kinds    []workloadKind
	selected workloadKind
	// reason and message say why its subsets are left as they are this sync; empty when the
	// member is usable. unsupported is set when it is reachable but cannot run the kind.
	reason, message string
	// waiting is set while the member's caches have not listed once: no failure, a retry soon.
	waiting bool
}

func (m *memberState) usable() bool { return m.reason == "" && !m.waiting }

// clusterRefs are the clusters ud's subsets name, then those its status still records, then
// those its AnnotationRetiredClusters lists, each once, in that order.
func clusterRefs(ud *appsv1alpha1.UnitedDeployment) []appsv1alpha1.ClusterProfileReference {
	seen := map[string]bool{}
	var refs []appsv1alpha1.ClusterProfileReference
	add := func(ref appsv1alpha1.ClusterProfileReference) {
		if k := fleet.Key(ref); !seen[k] {
			seen[k] = true
			refs = append(refs, ref)
		}
	}
	for _, s := range ud.Spec.Topology.Subsets {
		if s.ClusterProfileRef != nil {
			add(*s.ClusterProfileRef)
		}
	}
	for _, s := range ud.Status.SubsetStatuses {
		if s.Cluster != nil {
			if ref, ok := parseKey(s.Cluster.ClusterProfile); ok {
				add(ref)
			}
		}
	}
	for _, key := range retiredClusters(ud) {
		if ref, ok := parseKey(key); ok {
			add(ref)
		}
	}
	return refs
}

func parseKey(key string) (appsv1alpha1.ClusterProfileReference, bool) {
	for i := range key {
		if key[i] == '/' {
			return appsv1alpha1.ClusterProfileReference{Namespace: key[:i], Name: key[i+1:]}, i > 0 && i < len(key)-1
		}
	}
	return appsv1alpha1.ClusterProfileReference{}, false
}

// clusterOf is the ClusterProfile key of a subset, empty for the hub.
func clusterOf(s *appsv1alpha1.Subset) string {
	if s.ClusterProfileRef == nil {
		return ""
	}
	return fleet.Key(*s.ClusterProfileRef)
}

// observeMember finds out whether a member can be used this sync and builds its kinds.
func (c *Controller) observeMember(ud *appsv1alpha1.UnitedDeployment, ref appsv1alpha1.ClusterProfileReference) *memberState {
	ms := &memberState{ref: ref}
	key := fleet.Key(ref)
	unreachable := func(msg string) *memberState {
		ms.reason, ms.message = appsv1alpha1.ReasonClusterUnreachable, fmt.Sprintf("cluster %s is unreachable: %s", key, msg)
		return ms
	}
	if c.fleet == nil {
		return unreachable(fleet.ErrNoProviderFile.Error())
	}
	m, err := c.fleet.Member(ref)
	if err != nil {
		return unreachable(err.Error())
	}
	if cp := c.fleet.Profile(ref); cp != nil {
		if ok, msg := fleet.ControlPlaneHealthy(cp); !ok {
			return unreachable(msg)
		}
	}
	if ok, msg := m.Reachable(); !ok {
		return unreachable(msg)
	}
	ms.kinds = []workloadKind{
		subsetKind[*appsv1.StatefulSet]{a: statefulSets{m.Kube, m.StatefulSets}, cluster: key},
		subsetKind[*appsv1.Deployment]{a: deployments{m.Kube, m.Deployments}, cluster: key},
	}
	if ud.Spec.Template.TAppTemplate != nil {
		tl, err := m.TApps()
		if err != nil {
			ms.reason, ms.message = appsv1alpha1.ReasonClusterUnsupported, err.Error()
		} else {
			ms.kinds = append(ms.kinds, subsetKind[*appsv1alpha1.TApp]{a: tapps{m.Workloads, tl}, cluster: key})
		}
	}
	for _, k := range ms.kinds {
		if k.Selected(ud) {
			ms.selected = k
		}
	}
	ms.waiting = !m.HasSynced()
	return ms
}

// observeMembers reads the workloads of every member ud names that can be used this sync.
func (c *Controller) observeMembers(obs *observation) error {
	for _, ref := range clusterRefs(obs.ud) {
		ms := c.observeMember(obs.ud, ref)
		obs.members[fleet.Key(ref)] = ms
		if ms.waiting || ms.reason == appsv1alpha1.ReasonClusterUnreachable {
			continue
		}
		for _, k := range ms.kinds {
			list, err := k.List(obs.ud)
			if err != nil {
				return err
			}
			obs.addMember(k, list)
		}
	}
	return nil
}

// addMember files a member's workloads of kind k: those of the selected kind are the subsets'
// own, the others are left from a kind switch.
func (o *observation) addMember(k workloadKind, list []*Subset) {
	for _, s := range list {
		s.kind = k
		if o.selected != nil && k.Kind() == o.selected.Kind() {
			o.own[s.SubsetName] = append(o.own[s.SubsetName], s)
		} else {
			o.others = append(o.others, othersWorkload{k, s})
		}
	}
}

// memberWaiting reports whether a member's caches are still filling: the sync is tried again.
func (o *observation) memberWaiting() bool {
	for _, ms := range o.members {
		if ms.waiting {
			return true
		}
	}
	return false
}

// memberWorkloadEvent observes a member's subset workload created or deleted (the
// expectations of the sync that wrote it) and enqueues its UnitedDeployment.
func (c *Controller) memberWorkloadEvent(namespace, name string, e fleet.Event) {
	key := base.Key{Namespace: namespace, Name: name}
	switch e {
	case fleet.Added:
		c.expectations.CreationObserved(key.String())
	case fleet.Deleted:
		c.expectations.DeletionObserved(key.String())
	}
	c.Queue.Add(key)
}

// enqueueProfileUsers enqueues every UnitedDeployment whose subsets name the ClusterProfile
// namespace/name: its reachability or access changed.
func (c *Controller) enqueueProfileUsers(namespace, name string) {
	uds, err := c.udLister.List(labels.Everything())
	if err != nil {
		return
	}
	key := namespace + "/" + name
	var keys []base.Key
	for _, ud := range uds {
		for _, ref := range clusterRefs(ud) {
			if fleet.Key(ref) == key {
				keys = append(keys, base.Key{Namespace: ud.Namespace, Name: ud.Name})
				break
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		c.Queue.Add(k)
	}
}
