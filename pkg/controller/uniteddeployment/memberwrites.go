package uniteddeployment

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
)

// memberWrites are the expectations of the workloads a UnitedDeployment's syncs created or
// deleted in member clusters, each remembered by its member, kind and name until the member's
// cache shows it (docs/architecture.md, "Fleet: member clusters"). The hub's creations and
// deletions are counted (ControllerExpectations): its informers list once, before any sync. A
// member's informers list whenever the member is built anew (back from an outage, its access
// changed), and that first list reports every workload already there as added: counted, it
// would pass for a creation still on its way in another member, whose subset the next sync
// would then create a second time.
type memberWrites struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	pending map[string][]memberWrite
}

// memberWrite is one creation or deletion not yet seen in its member's cache.
type memberWrite struct {
	cluster, kind, name string
	// uid is the deleted workload's; empty for a creation.
	uid types.UID
	at  time.Time
}

func (w memberWrite) create() bool { return w.uid == "" }

func newMemberWrites(c clock.PassiveClock) *memberWrites {
	return &memberWrites{clock: c, ttl: expectations.DefaultTTL, pending: map[string][]memberWrite{}}
}

// created remembers a workload created in a member.
func (m *memberWrites) created(key, cluster, kind, name string) {
	m.add(key, memberWrite{cluster: cluster, kind: kind, name: name})
}

// deleted remembers a workload deleted in a member.
func (m *memberWrites) deleted(key string, s *Subset, kind string) {
	m.add(key, memberWrite{cluster: s.Cluster, kind: kind, name: s.Object.GetName(), uid: s.Object.GetUID()})
}

func (m *memberWrites) add(key string, w memberWrite) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w.at = m.clock.Now()
	m.pending[key] = append(m.pending[key], w)
}

// observed drops the write an event of a member's workload shows: its creation (added or
// updated) or its deletion. An event of any other workload shows nothing.
func (m *memberWrites) observed(e fleet.WorkloadEvent) {
	key := e.Namespace + "/" + e.UnitedDeployment
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending[key] = dropWrites(m.pending[key], func(w memberWrite) bool {
		return w.cluster == e.Cluster && w.kind == e.Kind && w.name == e.Name && w.create() == (e.Event != fleet.Deleted)
	})
}

// unseen returns how many of key's writes the observation does not show yet, and drops those
// it shows or that are older than the TTL (a lost event must not hold the UnitedDeployment for
// good). A write to a member the sync could not read is kept: nothing is written to that member
// until it is read again, and then it is judged.
func (m *memberWrites) unseen(key string, obs *observation) int {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending[key] = dropWrites(m.pending[key], func(w memberWrite) bool {
		if now.Sub(w.at) > m.ttl {
			return true
		}
		ms := obs.members[w.cluster]
		if ms == nil || !ms.listed(w.kind) {
			return false
		}
		s := obs.memberWorkload(w.cluster, w.kind, w.name)
		if w.create() {
			return s != nil
		}
		return s == nil || s.Object.GetUID() != w.uid
	})
	n := len(m.pending[key])
	if n == 0 {
		delete(m.pending, key)
	}
	return n
}

// forget drops key's writes: its UnitedDeployment is gone.
func (m *memberWrites) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, key)
}

func dropWrites(ws []memberWrite, seen func(memberWrite) bool) []memberWrite {
	out := ws[:0]
	for _, w := range ws {
		if !seen(w) {
			out = append(out, w)
		}
	}
	return out
}

// memberWorkload is the workload of kind named name the observation read in cluster; nil when
// it has none.
func (o *observation) memberWorkload(cluster, kind, name string) *Subset {
	match := func(s *Subset, k workloadKind) bool {
		return s.Cluster == cluster && k != nil && k.Kind() == kind && s.Object.GetName() == name
	}
	for _, l := range o.own {
		for _, s := range l {
			if match(s, s.kind) {
				return s
			}
		}
	}
	for _, w := range o.others {
		if match(w.subset, w.kind) {
			return w.subset
		}
	}
	return nil
}
