package uniteddeployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
)

// TestMemberWritesSeenByName: a member write is seen by an event of that very workload or by
// a sync that reads it (a creation present, a deletion absent or replaced by another UID), never
// by another workload; it is kept while its member cannot be read, and given up after the TTL.
func TestMemberWritesSeenByName(t *testing.T) {
	const key, m1, m2 = ns + "/web", "fleet/member-1", "fleet/member-2"
	sts := subsetKindOf("StatefulSet")
	workload := func(cluster, name string, uid types.UID) *Subset {
		return &Subset{Object: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}, SubsetName: name, Cluster: cluster, kind: sts}
	}
	read := &memberState{kinds: []workloadKind{sts}}
	obs := func(members map[string]*memberState, ws ...*Subset) *observation {
		o := &observation{own: map[string][]*Subset{}, members: members}
		for _, w := range ws {
			o.own[w.SubsetName] = append(o.own[w.SubsetName], w)
		}
		return o
	}
	clock := testclock.NewFakePassiveClock(time.Unix(0, 0))
	mw := newMemberWrites(clock)

	mw.created(key, m1, "StatefulSet", "web-eu-1")
	mw.deleted(key, workload(m2, "web-us-old", "uid-old"), "StatefulSet")
	// Another workload's event, and the other member's list, show neither write.
	mw.observed(fleet.WorkloadEvent{Cluster: m2, Namespace: ns, UnitedDeployment: "web", Kind: "StatefulSet", Name: "web-us-1", Event: fleet.Added})
	mw.observed(fleet.WorkloadEvent{Cluster: m2, Namespace: ns, UnitedDeployment: "web", Kind: "StatefulSet", Name: "web-eu-1", Event: fleet.Added})
	if n := mw.unseen(key, obs(map[string]*memberState{m1: read, m2: read}, workload(m2, "web-us-1", "u1"), workload(m2, "web-us-old", "uid-old"))); n != 2 {
		t.Fatalf("unseen %d, want 2: neither write is in its member's cache", n)
	}
	// member-1 unreachable: its creation is kept, not judged; member-2's old workload is gone.
	unreachable := &memberState{reason: appsv1alpha1.ReasonClusterUnreachable}
	if n := mw.unseen(key, obs(map[string]*memberState{m1: unreachable, m2: read}, workload(m2, "web-us-1", "u1"))); n != 1 {
		t.Fatalf("unseen %d, want 1: member-1's creation, its member unread", n)
	}
	if n := mw.unseen(key, obs(map[string]*memberState{m1: {waiting: true, kinds: []workloadKind{sts}}, m2: read})); n != 1 {
		t.Fatalf("unseen %d, want 1 while member-1's caches fill", n)
	}
	if n := mw.unseen(key, obs(map[string]*memberState{m1: read, m2: read}, workload(m1, "web-eu-1", "e1"))); n != 0 {
		t.Fatalf("unseen %d, want 0 once member-1 shows its workload", n)
	}

	// An event of the workload itself; a deletion replaced by a workload of the same name.
	mw.created(key, m1, "StatefulSet", "web-eu-2")
	mw.observed(fleet.WorkloadEvent{Cluster: m1, Namespace: ns, UnitedDeployment: "web", Kind: "StatefulSet", Name: "web-eu-2", Event: fleet.Updated})
	mw.deleted(key, workload(m2, "web-us-1", "u1"), "StatefulSet")
	if n := mw.unseen(key, obs(map[string]*memberState{m1: read, m2: read}, workload(m2, "web-us-1", "u2"))); n != 0 {
		t.Fatalf("unseen %d, want 0: seen by its event, and deleted (another UID now)", n)
	}

	// A write never seen is given up after the TTL, as the hub's expectations are.
	mw.created(key, m1, "StatefulSet", "web-eu-3")
	clock.SetTime(clock.Now().Add(expectations.DefaultTTL))
	if n := mw.unseen(key, obs(map[string]*memberState{m1: read})); n != 1 {
		t.Fatalf("unseen %d at the TTL, want 1", n)
	}
	clock.SetTime(clock.Now().Add(time.Second))
	if n := mw.unseen(key, obs(map[string]*memberState{m1: read})); n != 0 {
		t.Fatalf("unseen %d past the TTL, want 0", n)
	}
}
