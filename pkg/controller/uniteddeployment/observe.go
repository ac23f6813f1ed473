package uniteddeployment

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/podorder"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
)

// observation is what one sync reads from the informer caches: everything the plan and the
// status are computed from. Nothing in it may be mutated.
type observation struct {
	ud *appsv1alpha1.UnitedDeployment
	// status is ud's status as far as the controller knows: its own last status write while the
	// cache still shows the version that write was based on, else the cached status.
	// statusVersion is the resourceVersion to write the next status on.
	status        *appsv1alpha1.UnitedDeploymentStatus
	statusVersion string
	// selected is the kind spec.template asks for; nil when it names none.
	selected workloadKind
	// own holds the selected kind's workloads by subset name, oldest first.
	own map[string][]*Subset
	// others are workloads of the other kinds, left from a template-kind switch, ordered by kind
	// then name.
	others []othersWorkload
	// revisions are ud's ControllerRevisions, oldest first (revision.Sort).
	revisions []*appsv1.ControllerRevision
	// pods are the pods labelled with ud's name.
	pods []*corev1.Pod
	// members are the member clusters ud's subsets name, by ClusterProfile namespace/name; now
	// is when they were read (status.subsetStatuses[].cluster.lastSeenTime).
	members map[string]*memberState
	now     metav1.Time
}

// othersWorkload is a workload of a kind the template no longer asks for.
type othersWorkload struct {
	kind   workloadKind
	subset *Subset
}

// observe reads ud's subset workloads of every kind, revisions and pods from the caches.
func (c *Controller) observe(key string, ud *appsv1alpha1.UnitedDeployment) (*observation, error) {
	obs := &observation{ud: ud, own: map[string][]*Subset{}, members: map[string]*memberState{}, now: metav1.NewTime(c.clock.Now())}
	obs.status, obs.statusVersion = c.statuses.Current(key, ud.ResourceVersion, &ud.Status)
	for _, k := range c.kinds {
		list, err := k.List(ud)
		if err != nil {
			return nil, err
		}
		obs.add(k, list)
	}
	if err := c.observeMembers(obs); err != nil {
		return nil, err
	}
	obs.sortWorkloads()
	var err error
	if obs.revisions, err = revision.ListOwned(c.revisionLister, ud, ownedSelector(ud)); err != nil {
		return nil, err
	}
	revision.Sort(obs.revisions)
	obs.pods, err = c.podLister.Pods(ud.Namespace).List(ownedSelector(ud))
	return obs, err
}

// add files the workloads of kind k: the first kind the template selects is the selected one.
func (o *observation) add(k workloadKind, list []*Subset) {
	if o.selected == nil && k.Selected(o.ud) {
		o.selected = k
		for _, s := range list {
			o.own[s.SubsetName] = append(o.own[s.SubsetName], s)
		}
		return
	}
	for _, s := range list {
		o.others = append(o.others, othersWorkload{k, s})
	}
}

// sortWorkloads orders each subset's workloads oldest first (the oldest is kept among
// duplicates) and the other kinds' workloads by kind and name.
func (o *observation) sortWorkloads() {
	for _, l := range o.own {
		sortSubsets(l)
	}
	sort.SliceStable(o.others, func(i, j int) bool {
		a, b := o.others[i], o.others[j]
		if a.kind.Kind() != b.kind.Kind() {
			return a.kind.Kind() < b.kind.Kind()
		}
		return a.subset.Object.GetName() < b.subset.Object.GetName()
	})
}

// podCounts counts the active pods of a group.
type podCounts struct {
	replicas, ready, updated, updatedReady int32
}

func (p *podCounts) add(pod *corev1.Pod, updatedRevision string) {
	p.replicas++
	ready := podorder.IsReady(pod)
	if ready {
		p.ready++
	}
	if pod.Labels[appsv1alpha1.LabelRevision] == updatedRevision {
		p.updated++
		if ready {
			p.updatedReady++
		}
	}
}

// observedPods holds the pod counts of a UnitedDeployment.
type observedPods struct {
	total    podCounts
	bySubset map[string]*podCounts
	// byOwner counts per subset and kind of the pods' direct owner.
	byOwner map[string]map[string]*podCounts
}

func (o *observedPods) subset(name string) podCounts {
	if c := o.bySubset[name]; c != nil {
		return *c
	}
	return podCounts{}
}

func (o *observedPods) owner(subset, ownerKind string) podCounts {
	if c := o.byOwner[subset][ownerKind]; c != nil {
		return *c
	}
	return podCounts{}
}

// countPods counts the active pods, in total, per subset and per subset and owner kind.
func countPods(pods []*corev1.Pod, updatedRevision string) *observedPods {
	o := &observedPods{bySubset: map[string]*podCounts{}, byOwner: map[string]map[string]*podCounts{}}
	for _, p := range pods {
		if !podActive(p) {
			continue
		}
		s := p.Labels[appsv1alpha1.LabelSubsetName]
		o.total.add(p, updatedRevision)
		if o.bySubset[s] == nil {
			o.bySubset[s] = &podCounts{}
			o.byOwner[s] = map[string]*podCounts{}
		}
		o.bySubset[s].add(p, updatedRevision)
		ownerKind := ""
		if ref := metav1.GetControllerOf(p); ref != nil {
			ownerKind = ref.Kind
		}
		if o.byOwner[s][ownerKind] == nil {
			o.byOwner[s][ownerKind] = &podCounts{}
		}
		o.byOwner[s][ownerKind].add(p, updatedRevision)
	}
	return o
}

// countAll counts the hub's pods (countPods) and, from their workloads' own status, the pods
// of the subsets in member clusters, whose pods the agent does not cache. A member workload's
// updated pods count only when it carries the updated revision; its updated ready pods are the
// kind's reading of its status (workloadCounts: exact once every pod is updated, else a lower
// bound).
func countAll(obs *observation, updatedRevision string) *observedPods {
	o := countPods(obs.pods, updatedRevision)
	add := func(s *Subset, ownerKind string) {
		c := podCounts{replicas: s.Status.replicas, ready: s.Status.ready}
		if s.Revision == updatedRevision {
			c.updated, c.updatedReady = s.Status.updated, s.Status.updatedReady
		}
		o.addCounts(s.SubsetName, ownerKind, c)
	}
	for _, l := range obs.own {
		for _, s := range l {
			if s.Cluster != "" && obs.selected != nil {
				add(s, obs.selected.PodOwnerKind())
			}
		}
	}
	for _, w := range obs.others {
		if w.subset.Cluster != "" {
			add(w.subset, w.kind.PodOwnerKind())
		}
	}
	return o
}

func (p *podCounts) plus(c podCounts) {
	p.replicas += c.replicas
	p.ready += c.ready
	p.updated += c.updated
	p.updatedReady += c.updatedReady
}

// addCounts adds counts to the total, the subset's and the subset's owner kind's.
func (o *observedPods) addCounts(subset, ownerKind string, c podCounts) {
	o.total.plus(c)
	if o.bySubset[subset] == nil {
		o.bySubset[subset] = &podCounts{}
		o.byOwner[subset] = map[string]*podCounts{}
	}
	o.bySubset[subset].plus(c)
	if o.byOwner[subset][ownerKind] == nil {
		o.byOwner[subset][ownerKind] = &podCounts{}
	}
	o.byOwner[subset][ownerKind].plus(c)
}

// podActive is true for a pod that is neither being deleted nor finished.
func podActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}
