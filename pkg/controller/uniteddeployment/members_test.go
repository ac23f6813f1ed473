package uniteddeployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	cpv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	cpfake "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned/fake"
	cpinformers "sigs.k8s.io/cluster-inventory-api/client/informers/externalversions"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
)

// member is one fake member cluster: its clientset and the calls the controller made to it.
type member struct {
	kube *k8sfake.Clientset
	mu   sync.Mutex
	log  []string
	fail map[string]error
}

func (m *member) record(a core.Action) (bool, runtime.Object, error) {
	if a.GetVerb() == "list" || a.GetVerb() == "watch" || a.GetResource().Resource == "resource" {
		// Informers' reads, and discovery (the fake's "get resource").
		return false, nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, describe(a))
	if err := m.fail[a.GetVerb()+" "+a.GetResource().Resource]; err != nil {
		return true, nil, err
	}
	return false, nil, nil
}

func (m *member) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.log
	m.log = nil
	return out
}

// memberFixture is a hub fixture whose registry reaches one member, fleet/member-1.
type memberFixture struct {
	*fixture
	profiles *cpfake.Clientset
	member   *member
	reg      *fleet.Registry
}

func memberProfile(healthy metav1.ConditionStatus) *cpv1alpha1.ClusterProfile {
	return &cpv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "member-1", UID: "cp-uid"},
		Status: cpv1alpha1.ClusterProfileStatus{
			Conditions:      []metav1.Condition{{Type: cpv1alpha1.ClusterConditionControlPlaneHealthy, Status: healthy, Reason: "Probe"}},
			AccessProviders: []cpv1alpha1.AccessProvider{{Name: "test", Cluster: clientcmdv1.Cluster{Server: "https://127.0.0.1:6443"}}},
		},
	}
}

func newMemberFixture(t *testing.T, withAccess bool, cp *cpv1alpha1.ClusterProfile, objects ...runtime.Object) *memberFixture {
	mf := &memberFixture{profiles: cpfake.NewSimpleClientset(), member: &member{kube: k8sfake.NewClientset(), fail: map[string]error{}}}
	mf.member.kube.PrependReactor("*", "*", mf.member.record)
	mf.member.kube.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
		// The fake implements no generateName.
		if o, ok := a.(core.CreateAction).GetObject().(metav1.Object); ok && o.GetName() == "" {
			o.SetName(o.GetGenerateName() + "x1")
		}
		return false, nil, nil
	})
	if cp != nil {
		if _, err := mf.profiles.ApisV1alpha1().ClusterProfiles(cp.Namespace).Create(context.Background(), cp, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := cpinformers.NewSharedInformerFactory(mf.profiles, 0)
	inf := factory.Apis().V1alpha1().ClusterProfiles()
	opts := fleet.Options{Profiles: inf.Lister(), NewClients: func(*rest.Config) (fleet.Clients, error) {
		return fleet.Clients{Kube: mf.member.kube, Workloads: fake.NewSimpleClientset()}, nil
	}}
	if withAccess {
		opts.Access = access.New([]access.Provider{{Name: "test", ExecConfig: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/token"}}})
	}
	reg, err := fleet.New(opts, inf.Informer())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	reg.Start(ctx)
	mf.reg = reg
	mf.fixture = newFleetFixture(t, reg, objects...)
	return mf
}

// memberUD is "web": zone-a on the hub, eu in fleet/member-1, 4 replicas each.
func memberUD() *appsv1alpha1.UnitedDeployment {
	eu := appsv1alpha1.Subset{Name: "eu", ClusterProfileRef: &appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"}}
	ud := newUD("StatefulSet", 8, zone("zone-a"), eu)
	ud.ResourceVersion = "1"
	return ud
}

// withFinalizer is ud as the controller's finalizer patch leaves it.
func withFinalizer(ud *appsv1alpha1.UnitedDeployment) *appsv1alpha1.UnitedDeployment {
	ud = ud.DeepCopy()
	ud.Finalizers = []string{appsv1alpha1.FinalizerMemberWorkloads}
	return ud
}

// syncUntilMember builds the member and waits for its caches, as the first syncs would.
func (mf *memberFixture) syncUntilMember(t *testing.T) {
	t.Helper()
	m, err := mf.reg.Member(appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, m.HasSynced)
	mf.member.calls()
}

func subsetStatus(t *testing.T, st *appsv1alpha1.UnitedDeploymentStatus, name string) appsv1alpha1.SubsetStatus {
	t.Helper()
	for _, s := range st.SubsetStatuses {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no subset status %s in %+v", name, st.SubsetStatuses)
	return appsv1alpha1.SubsetStatus{}
}

// TestFinalizerFirst: a UnitedDeployment naming a cluster gets the member finalizer before
// anything is written anywhere.
func TestFinalizerFirst(t *testing.T) {
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionTrue), memberUD())
	mf.sync("web")
	mf.wantActions("patch uniteddeployments ")
	patch := string(mf.writes()[0].(core.PatchAction).GetPatch())
	if patch != `{"metadata":{"finalizers":["`+appsv1alpha1.FinalizerMemberWorkloads+`"],"resourceVersion":"1"}}` {
		t.Fatalf("finalizer patch %s", patch)
	}
	if calls := mf.member.calls(); len(calls) != 0 {
		t.Fatalf("member calls before the finalizer: %v", calls)
	}
}

// TestClusterSubsetCreatedInMember: the hub subset's StatefulSet is created on the hub, the
// cluster subset's in the member, in the UnitedDeployment's namespace, labelled as ours with
// the UnitedDeployment's UID and without a controller reference.
func TestClusterSubsetCreatedInMember(t *testing.T) {
	ud := withFinalizer(memberUD())
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionTrue), ud)
	rev := revisionName(t, ud)
	mf.syncUntilMember(t)
	mf.sync("web")
	got := mf.member.calls()
	if strings.Join(got, ",") != "create statefulsets web-eu-" {
		t.Fatalf("member calls %v, want the eu StatefulSet created", got)
	}
	l, err := mf.member.kube.AppsV1().StatefulSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("member StatefulSets %v %v", l, err)
	}
	set := l.Items[0]
	if len(set.OwnerReferences) != 0 || set.Labels[appsv1alpha1.LabelUnitedDeploymentUID] != "ud-uid" ||
		set.Labels[appsv1alpha1.LabelManagedBy] != appsv1alpha1.ManagedByAgent || set.Labels[appsv1alpha1.LabelSubsetName] != "eu" ||
		set.Labels[appsv1alpha1.LabelRevision] != rev || *set.Spec.Replicas != 4 {
		t.Fatalf("member StatefulSet: owners %v labels %v replicas %d", set.OwnerReferences, set.Labels, *set.Spec.Replicas)
	}
	st := statusOf(t, mf.written(len(mf.writes())-1))
	eu := subsetStatus(t, st, "eu")
	if eu.Cluster == nil || eu.Cluster.ClusterProfile != "fleet/member-1" || !eu.Cluster.Reachable || eu.Cluster.LastSeenTime == nil {
		t.Fatalf("eu cluster status %+v", eu.Cluster)
	}
	if za := subsetStatus(t, st, "zone-a"); za.Cluster != nil {
		t.Fatalf("hub subset has a cluster status %+v", za.Cluster)
	}
	wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionFalse, appsv1alpha1.ReasonNoFailure)
}

// TestNoProviderFile: without --clusterprofile-provider-file the hub subset is provisioned and
// the cluster subset refused with SubsetFailure naming the flag; no finalizer.
func TestNoProviderFile(t *testing.T) {
	mf := newMemberFixture(t, false, memberProfile(metav1.ConditionTrue), memberUD())
	rev := revisionName(t, memberUD())
	mf.sync("web")
	mf.wantActions("create controllerrevisions "+rev, "create statefulsets web-zone-a-", "update uniteddeployments/status web")
	st := statusOf(t, mf.written(2))
	c := wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionTrue, appsv1alpha1.ReasonClusterUnreachable)
	if !strings.Contains(c.Message, "--clusterprofile-provider-file") || !strings.Contains(c.Message, "fleet/member-1") || !strings.Contains(c.Message, "eu") {
		t.Fatalf("SubsetFailure message %q", c.Message)
	}
	if eu := subsetStatus(t, st, "eu"); eu.Cluster == nil || eu.Cluster.Reachable {
		t.Fatalf("eu cluster status %+v", eu.Cluster)
	}
}

// TestUnhealthyMemberHoldsItsSubset: a member whose ClusterProfile says its control plane is
// unhealthy gets no write; its subset keeps the counts last seen and says why.
func TestUnhealthyMemberHoldsItsSubset(t *testing.T) {
	ud := withFinalizer(memberUD())
	seen := metav1.NewTime(epoch.Add(time.Minute))
	ud.Status.SubsetStatuses = []appsv1alpha1.SubsetStatus{
		{Name: "zone-a", Replicas: 4},
		{Name: "eu", Replicas: 4, ReadyReplicas: 3, UpdatedReplicas: 4,
			Cluster: &appsv1alpha1.SubsetClusterStatus{ClusterProfile: "fleet/member-1", Reachable: true, LastSeenTime: &seen}},
	}
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionFalse), ud)
	mf.sync("web")
	if calls := mf.member.calls(); len(calls) != 0 {
		t.Fatalf("calls to an unhealthy member: %v", calls)
	}
	st := statusOf(t, mf.written(len(mf.writes())-1))
	eu := subsetStatus(t, st, "eu")
	if eu.ReadyReplicas != 3 || eu.UpdatedReplicas != 4 || eu.Cluster.Reachable || !eu.Cluster.LastSeenTime.Equal(&seen) ||
		!strings.Contains(eu.Cluster.Message, "ControlPlaneHealthy is False") {
		t.Fatalf("eu status %+v cluster %+v", eu, eu.Cluster)
	}
	if st.ReadyReplicas != 3 {
		t.Fatalf("total ready %d, want the member's last 3", st.ReadyReplicas)
	}
	c := wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionTrue, appsv1alpha1.ReasonClusterUnreachable)
	if !strings.Contains(c.Message, "cluster fleet/member-1 is unreachable") {
		t.Fatalf("SubsetFailure %q", c.Message)
	}
	if u := condition(t, st, appsv1alpha1.SubsetUpdated); u.Status != metav1.ConditionFalse || !strings.Contains(u.Message, "eu") {
		t.Fatalf("SubsetUpdated %+v", u)
	}
}

// TestMemberErrorRedacted: a member's refusal carrying a credential reaches the status and the
// Events without it.
func TestMemberErrorRedacted(t *testing.T) {
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionTrue), withFinalizer(memberUD()))
	mf.member.fail["create statefulsets"] = errors.New(`Unauthorized: request with "Authorization: Bearer s3cr3t-t0ken" refused`)
	mf.syncUntilMember(t)
	if err := mf.trySync("web"); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("sync error %v: want a redacted refusal", err)
	}
	st := statusOf(t, mf.written(len(mf.writes())-1))
	c := wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionTrue, appsv1alpha1.ReasonFailedCreate)
	if strings.Contains(c.Message, "s3cr3t") || !strings.Contains(c.Message, "in cluster fleet/member-1") {
		t.Fatalf("SubsetFailure message %q", c.Message)
	}
	for _, e := range mf.events() {
		if strings.Contains(e, "s3cr3t") {
			t.Fatalf("Event carries the token: %q", e)
		}
	}
}

// TestTAppRefusedInMemberWithoutCRD: a TApp subset in a member that does not serve TApps is
// refused, naming the cluster.
func TestTAppRefusedInMemberWithoutCRD(t *testing.T) {
	ud := withFinalizer(memberUD())
	setKind(ud, "TApp")
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionTrue), ud)
	mf.member.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = nil
	mf.sync("web")
	st := statusOf(t, mf.written(len(mf.writes())-1))
	c := wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionTrue, appsv1alpha1.ReasonClusterUnsupported)
	if !strings.Contains(c.Message, "cluster fleet/member-1 cannot run a TApp subset") {
		t.Fatalf("SubsetFailure %q", c.Message)
	}
	for _, call := range mf.member.calls() {
		if !strings.HasPrefix(call, "get ") {
			t.Fatalf("write to a member without TApps: %s", call)
		}
	}
}

// TestDeletionRemovesMemberWorkloads: a deleted UnitedDeployment has its member workloads
// deleted, and is let go once the member shows none.
func TestDeletionRemovesMemberWorkloads(t *testing.T) {
	ud := withFinalizer(memberUD())
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionTrue), ud)
	mf.syncUntilMember(t)
	mf.sync("web")
	if calls := mf.member.calls(); len(calls) != 1 {
		t.Fatalf("member calls %v", calls)
	}
	m, _ := mf.reg.Member(appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"})
	waitUntil(t, func() bool { l, _ := m.StatefulSets.List(labels.Everything()); return len(l) == 1 })

	deleted := mf.ud("web").DeepCopy()
	now := metav1.NewTime(time.Now())
	deleted.DeletionTimestamp = &now
	mf.put(deleted)
	if err := mf.trySync("web"); err != nil {
		t.Fatalf("first finalizing sync: %v (waiting for the member's deletions is no error)", err)
	}
	if calls := mf.member.calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "delete statefulsets web-eu-") {
		t.Fatalf("member calls %v, want the eu StatefulSet deleted", calls)
	}
	if len(mf.writes()) != 0 {
		t.Fatalf("hub writes before the member is clear: %v", mf.actions())
	}
	waitUntil(t, func() bool { l, _ := m.StatefulSets.List(labels.Everything()); return len(l) == 0 })
	mf.sync("web")
	mf.wantActions("patch uniteddeployments ")
	if patch := string(mf.writes()[0].(core.PatchAction).GetPatch()); !strings.Contains(patch, `"finalizers":[]`) {
		t.Fatalf("finalizer removal patch %s", patch)
	}
}

// TestMemberWorkloadOfAnotherUIDIsNotOurs: a member's workload labelled with the name but
// another UID (a UnitedDeployment deleted and created again) is neither adopted nor counted.
func TestMemberWorkloadOfAnotherUIDIsNotOurs(t *testing.T) {
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionTrue), withFinalizer(memberUD()))
	old := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-eu-old", Labels: map[string]string{
		appsv1alpha1.LabelManagedBy: appsv1alpha1.ManagedByAgent, appsv1alpha1.LabelUnitedDeploymentName: "web",
		appsv1alpha1.LabelSubsetName: "eu", appsv1alpha1.LabelUnitedDeploymentUID: "other-uid"}}}
	if _, err := mf.member.kube.AppsV1().StatefulSets(ns).Create(context.Background(), old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mf.syncUntilMember(t)
	m, _ := mf.reg.Member(appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"})
	waitUntil(t, func() bool { l, _ := m.StatefulSets.List(labels.Everything()); return len(l) == 1 })
	mf.sync("web")
	if calls := mf.member.calls(); strings.Join(calls, ",") != "create statefulsets web-eu-" {
		t.Fatalf("member calls %v, want a new eu StatefulSet beside the other UID's", calls)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// memberWorkloadCreated is a UnitedDeployment with one subset in a healthy member whose
// StatefulSet the agent has created and seen through the member's informer; the member's calls
// so far are dropped.
func memberWorkloadCreated(t *testing.T) *memberFixture {
	t.Helper()
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionTrue), withFinalizer(memberUD()))
	mf.syncUntilMember(t)
	mf.sync("web")
	m, _ := mf.reg.Member(appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"})
	waitUntil(t, func() bool { l, _ := m.StatefulSets.List(labels.Everything()); return len(l) == 1 })
	mf.observe()
	// The member's creation is observed through its informer's event.
	waitUntil(t, func() bool { return mf.c.expectations.SatisfiedExpectations(ns + "/web") })
	mf.member.calls()
	return mf
}

// TestMemberPutBackWhenItReturns: a template written back (a Canary's abort) while a member is
// unreachable leaves that member alone; once its profile says it is healthy again, its
// workload gets the template.
func TestMemberPutBackWhenItReturns(t *testing.T) {
	mf := memberWorkloadCreated(t)

	setProfileHealth(t, mf, metav1.ConditionFalse)
	mf.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:0") })
	mf.observe()
	mf.sync("web")
	if calls := mf.member.calls(); len(calls) != 0 {
		t.Fatalf("calls to the unreachable member: %v", calls)
	}
	mf.observe()
	setProfileHealth(t, mf, metav1.ConditionTrue)
	mf.sync("web")
	calls := mf.member.calls()
	if len(calls) != 1 || !strings.HasPrefix(calls[0], "update statefulsets web-eu-") {
		t.Fatalf("member calls once back %v, want its StatefulSet updated", calls)
	}
	l, _ := mf.member.kube.AppsV1().StatefulSets(ns).List(context.Background(), metav1.ListOptions{})
	if img := l.Items[0].Spec.Template.Spec.Containers[0].Image; img != "nginx:0" {
		t.Fatalf("member image %s, want nginx:0", img)
	}
}

// setProfileHealth sets the member profile's ControlPlaneHealthy and waits for the registry to
// see it.
func setProfileHealth(t *testing.T, mf *memberFixture, s metav1.ConditionStatus) {
	t.Helper()
	cp := memberProfile(s)
	if _, err := mf.profiles.ApisV1alpha1().ClusterProfiles("fleet").UpdateStatus(context.Background(), cp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"}
	waitUntil(t, func() bool {
		ok, _ := fleet.ControlPlaneHealthy(mf.reg.Profile(ref))
		return ok == (s == metav1.ConditionTrue)
	})
}

// TestSubsetMovedToMember: a hub subset given a clusterProfileRef gets its workload in the
// member first; the hub's keeps serving until the member's has every replica ready on the
// updated revision, and is deleted then.
func TestSubsetMovedToMember(t *testing.T) {
	ud := memberUD()
	ud.Spec.Topology.Subsets[1].ClusterProfileRef = nil
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionTrue), ud)
	rev := revisionName(t, ud)
	mf.sync("web")
	mf.wantActions("create controllerrevisions "+rev, "create statefulsets web-zone-a-", "create statefulsets web-eu-", "update uniteddeployments/status web")
	mf.observe()
	m, err := mf.reg.Member(appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, m.HasSynced)

	mf.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.Topology.Subsets[1].ClusterProfileRef = &appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"}
	})
	mf.sync("web")
	mf.wantActions("patch uniteddeployments ")
	mf.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Finalizers = []string{appsv1alpha1.FinalizerMemberWorkloads}
	})
	mf.sync("web")
	if calls := mf.member.calls(); strings.Join(calls, ",") != "create statefulsets web-eu-" {
		t.Fatalf("member calls %v, want the eu StatefulSet created there", calls)
	}
	for _, a := range mf.actions() {
		if strings.HasPrefix(a, "delete ") {
			t.Fatalf("hub workload deleted before the member's is ready: %v", mf.actions())
		}
	}
	mf.observe()
	waitUntil(t, func() bool { return mf.c.expectations.SatisfiedExpectations(ns + "/web") })
	set, err := mf.member.kube.AppsV1().StatefulSets(ns).Get(context.Background(), "web-eu-x1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	set.Status = appsv1.StatefulSetStatus{Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 4}
	if _, err := mf.member.kube.AppsV1().StatefulSets(ns).UpdateStatus(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mf.member.calls()
	waitUntil(t, func() bool {
		s, err := m.StatefulSets.StatefulSets(ns).Get("web-eu-x1")
		return err == nil && s.Status.ReadyReplicas == 4
	})
	mf.sync("web")
	var deleted []string
	for _, a := range mf.actions() {
		if strings.HasPrefix(a, "delete statefulsets ") {
			deleted = append(deleted, a)
		}
	}
	if len(deleted) != 1 || !strings.HasPrefix(deleted[0], "delete statefulsets web-eu-") {
		t.Fatalf("hub actions %v, want the hub's eu StatefulSet deleted", mf.actions())
	}
}

// TestMemberConflictIsLagging: a member refusing an update with a conflict (its cache behind,
// as after an outage) fails the sync with an error the workers take for a lagging cache
// (apierrors.IsConflict: requeued quietly, as on the hub), naming the cluster, redacted.
func TestMemberConflictIsLagging(t *testing.T) {
	mf := memberWorkloadCreated(t)

	mf.member.fail["update statefulsets"] = apierrors.NewConflict(appsv1.Resource("statefulsets"), "web-eu-x1",
		errors.New(`the object has been modified (token: s3cr3t)`))
	mf.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:0") })
	err := mf.trySync("web")
	if !quietRequeue(err) {
		t.Errorf("the controller's workers would log %v as an error", err)
	}
	if !apierrors.IsConflict(err) {
		t.Fatalf("sync error %v: want a conflict", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "in cluster fleet/member-1") || strings.Contains(msg, "s3cr3t") {
		t.Fatalf("sync error %q: want the cluster named, no token", msg)
	}
	if calls := mf.member.calls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "update statefulsets web-eu-") {
		t.Fatalf("member calls %v, want one StatefulSet update", calls)
	}
}

// TestRetiredClusterKeptUntilItsWorkloadIsGone: a cluster dropped from the spec while its
// member is unreachable is written into AnnotationRetiredClusters before the status stops
// recording it; once the member answers, its workload is deleted, and the annotation (then the
// finalizer) is cleared only when the member shows it gone.
func TestRetiredClusterKeptUntilItsWorkloadIsGone(t *testing.T) {
	ud := withFinalizer(memberUD())
	ud.Spec.Topology.Subsets = ud.Spec.Topology.Subsets[:1] // eu dropped
	ud.Status.SubsetStatuses = []appsv1alpha1.SubsetStatus{{Name: "zone-a", Replicas: 4},
		{Name: "eu", Replicas: 4, Cluster: &appsv1alpha1.SubsetClusterStatus{ClusterProfile: "fleet/member-1", Reachable: true}}}
	mf := newMemberFixture(t, true, memberProfile(metav1.ConditionFalse), ud)
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-eu-x1", UID: "set-uid", Labels: map[string]string{
		appsv1alpha1.LabelManagedBy: appsv1alpha1.ManagedByAgent, appsv1alpha1.LabelUnitedDeploymentName: "web",
		appsv1alpha1.LabelUnitedDeploymentUID: "ud-uid", appsv1alpha1.LabelSubsetName: "eu"}}}
	if _, err := mf.member.kube.AppsV1().StatefulSets(ns).Create(context.Background(), set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mf.syncUntilMember(t)
	wantRetired := func(want string) {
		t.Helper()
		mf.wantActions("patch uniteddeployments ")
		var p struct {
			Metadata struct{ Annotations map[string]*string }
		}
		if err := json.Unmarshal(mf.writes()[0].(core.PatchAction).GetPatch(), &p); err != nil {
			t.Fatal(err)
		}
		got, ok := p.Metadata.Annotations[appsv1alpha1.AnnotationRetiredClusters]
		if !ok || (got == nil) != (want == "") || (got != nil && *got != want) {
			t.Fatalf("patch %s, want %s = %q", mf.writes()[0].(core.PatchAction).GetPatch(), appsv1alpha1.AnnotationRetiredClusters, want)
		}
	}
	mf.sync("web")
	wantRetired("fleet/member-1")

	// The status no longer records eu; the annotation does, while the member is unreachable.
	ud = mf.ud("web")
	ud.Annotations = map[string]string{appsv1alpha1.AnnotationRetiredClusters: "fleet/member-1"}
	ud.Status.SubsetStatuses = ud.Status.SubsetStatuses[:1]
	mf.put(ud)
	for _, a := range mf.sync("web") {
		if strings.HasPrefix(a, "patch uniteddeployments") {
			t.Fatalf("sync with the member unreachable: %s, want the annotation kept", a)
		}
	}
	mf.observe() // the hub subset's StatefulSet created
	if calls := mf.member.calls(); len(calls) != 0 {
		t.Fatalf("calls to the unreachable member: %v", calls)
	}

	setProfileHealth(t, mf, metav1.ConditionTrue)
	mf.sync("web")
	if calls := mf.member.calls(); strings.Join(calls, ",") != "delete statefulsets web-eu-x1" {
		t.Fatalf("member calls once back %v, want its StatefulSet deleted", calls)
	}
	m, _ := mf.reg.Member(appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"})
	waitUntil(t, func() bool { l, _ := m.StatefulSets.List(labels.Everything()); return len(l) == 0 })
	waitUntil(t, func() bool { return mf.c.expectations.SatisfiedExpectations(ns + "/web") })
	mf.sync("web")
	wantRetired("")

	ud = mf.ud("web")
	ud.Annotations = nil
	mf.put(ud)
	mf.sync("web")
	mf.wantActions("patch uniteddeployments ")
	if p := string(mf.writes()[0].(core.PatchAction).GetPatch()); !strings.Contains(p, `"finalizers":[]`) {
		t.Fatalf("patch %s, want the finalizer removed", p)
	}
}

// TestMemberOutageIsRequeuedQuietly: a write a member never answered, or a conflict, is
// requeued without an error line; a member's refusal (403, 422) and the hub's own failures are not.
func TestMemberOutageIsRequeuedQuietly(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	for _, c := range []struct {
		name  string
		err   error
		quiet bool
	}{
		{"member did not answer", &memberWriteError{cluster: "fleet-system/m", err: errors.New(`Put "https://127.0.0.1:1/x": dial tcp 127.0.0.1:1: connect: connection refused`)}, true},
		{"member conflict", &memberWriteError{cluster: "fleet-system/m", err: apierrors.NewConflict(gr, "web", errors.New("modified"))}, true},
		{"member forbids", &memberWriteError{cluster: "fleet-system/m", err: apierrors.NewForbidden(gr, "web", errors.New("no"))}, false},
		{"hub conflict", apierrors.NewConflict(gr, "web", errors.New("modified")), true},
		{"hub failure", errors.New("connection refused"), false},
	} {
		if got := quietRequeue(fmt.Errorf("updating StatefulSet web: %w", c.err)); got != c.quiet {
			t.Errorf("%s: quiet %v, want %v", c.name, got, c.quiet)
		}
	}
}
