package fleet

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	cpv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	cpfake "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned/fake"
	cpinformers "sigs.k8s.io/cluster-inventory-api/client/informers/externalversions"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	workloadfake "github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
)

func profile(name, server string, healthy metav1.ConditionStatus) *cpv1alpha1.ClusterProfile {
	return &cpv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, UID: "uid-" + "name"},
		Status: cpv1alpha1.ClusterProfileStatus{
			Conditions: []metav1.Condition{{Type: cpv1alpha1.ClusterConditionControlPlaneHealthy, Status: healthy, Reason: "Probe", Message: "probe said so"}},
			AccessProviders: []cpv1alpha1.AccessProvider{{Name: "test", Cluster: clientcmdv1.Cluster{Server: server,
				Extensions: []clientcmdv1.NamedExtension{{Name: "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"}}}}},
		},
	}
}

// fixture is a hub with ClusterProfiles and a registry whose members are fake clientsets,
// recording the configuration each was built from.
type fixture struct {
	t        *testing.T
	cps      *cpfake.Clientset
	reg      *Registry
	mu       sync.Mutex
	built    []*rest.Config
	members  map[string]*kubefake.Clientset
	enqueued chan string
}

func newFixture(t *testing.T, acc *access.Config, objs ...*cpv1alpha1.ClusterProfile) *fixture {
	f := &fixture{t: t, cps: cpfake.NewSimpleClientset(), members: map[string]*kubefake.Clientset{}, enqueued: make(chan string, 100)}
	for _, o := range objs {
		if _, err := f.cps.ApisV1alpha1().ClusterProfiles(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := cpinformers.NewSharedInformerFactory(f.cps, 0)
	inf := factory.Apis().V1alpha1().ClusterProfiles()
	reg, err := New(Options{
		Access:   acc,
		Profiles: inf.Lister(),
		NewClients: func(cfg *rest.Config) (Clients, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.built = append(f.built, cfg)
			kube := f.members[cfg.Host]
			if kube == nil {
				kube = kubefake.NewClientset()
				f.members[cfg.Host] = kube
			}
			return Clients{Kube: kube, Workloads: workloadfake.NewSimpleClientset()}, nil
		},
	}, inf.Informer())
	if err != nil {
		t.Fatal(err)
	}
	reg.OnWorkload(func(ns, name string, _ Event) { f.enqueued <- ns + "/" + name })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	reg.Start(ctx)
	f.reg = reg
	return f
}

func testAccess() *access.Config {
	return access.New([]access.Provider{{
		Name:                        "test",
		ExecConfig:                  &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/member-token", Args: []string{"--cluster"}},
		ProfileSourcedCLIArgsPolicy: access.ProfileSourcedCLIArgsPolicyAppend,
	}})
}

var ref1 = appsv1alpha1.ClusterProfileReference{Namespace: "fleet", Name: "member-1"}

func TestMemberRefusedWithoutProviderFile(t *testing.T) {
	f := newFixture(t, nil, profile("member-1", "https://127.0.0.1:1", metav1.ConditionTrue))
	if _, err := f.reg.Member(ref1); !errors.Is(err, ErrNoProviderFile) {
		t.Fatalf("Member without a provider file: %v, want ErrNoProviderFile", err)
	}
	if !strings.Contains(ErrNoProviderFile.Error(), "--clusterprofile-provider-file") {
		t.Fatalf("the error must name the flag: %v", ErrNoProviderFile)
	}
}

func TestMemberOfAMissingProfile(t *testing.T) {
	f := newFixture(t, testAccess())
	_, err := f.reg.Member(ref1)
	if err == nil || !strings.Contains(err.Error(), "ClusterProfile fleet/member-1") {
		t.Fatalf("Member of a missing profile: %v, want an error naming fleet/member-1", err)
	}
}

// TestMemberBuiltFromProfile: the member's configuration is the profile's server with the
// provider file's exec plugin, built once while the profile's access is unchanged.
func TestMemberBuiltFromProfile(t *testing.T) {
	f := newFixture(t, testAccess(), profile("member-1", "https://127.0.0.1:6443", metav1.ConditionTrue))
	m, err := f.reg.Member(ref1)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.reg.Member(ref1)
	if err != nil || again != m {
		t.Fatalf("second Member: %p, %v; want the same member %p", again, err, m)
	}
	if len(f.built) != 1 {
		t.Fatalf("built %d configurations, want 1", len(f.built))
	}
	cfg := f.built[0]
	if cfg.Host != "https://127.0.0.1:6443" || cfg.ExecProvider == nil || cfg.ExecProvider.Command != "/bin/member-token" {
		t.Fatalf("member configuration: host %q exec %+v", cfg.Host, cfg.ExecProvider)
	}
	if m.Profile != "fleet/member-1" {
		t.Fatalf("Profile = %q", m.Profile)
	}
}

// TestMemberRebuiltAndDropped: a change of the profile's access providers rebuilds the member;
// a deleted profile drops it.
func TestMemberRebuiltAndDropped(t *testing.T) {
	cp := profile("member-1", "https://127.0.0.1:6443", metav1.ConditionTrue)
	f := newFixture(t, testAccess(), cp)
	m, err := f.reg.Member(ref1)
	if err != nil {
		t.Fatal(err)
	}
	cp = cp.DeepCopy()
	cp.Status.AccessProviders[0].Cluster.Server = "https://127.0.0.1:7443"
	if _, err := f.cps.ApisV1alpha1().ClusterProfiles("fleet").UpdateStatus(context.Background(), cp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		n, err := f.reg.Member(ref1)
		return err == nil && n != m && n.Profile == m.Profile
	})
	if last := f.built[len(f.built)-1]; last.Host != "https://127.0.0.1:7443" {
		t.Fatalf("rebuilt for %q, want the new server", last.Host)
	}
	if m.cancel == nil {
		t.Fatal("old member has no cancel")
	}
	if err := f.cps.ApisV1alpha1().ClusterProfiles("fleet").Delete(context.Background(), "member-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		f.reg.mu.Lock()
		defer f.reg.mu.Unlock()
		return f.reg.members["fleet/member-1"] == nil
	})
	if _, err := f.reg.Member(ref1); err == nil {
		t.Fatal("Member of a deleted profile succeeded")
	}
}

// TestProviderArgsNotAccumulated: the library appends a profile's arguments to the provider's
// exec configuration; every build starts from the provider file's own.
func TestProviderArgsNotAccumulated(t *testing.T) {
	acc := testAccess()
	cp := profile("member-1", "https://127.0.0.1:6443", metav1.ConditionTrue)
	cp.Status.AccessProviders[0].Cluster.Extensions[0].Extension.Raw = []byte(`["--name=member-1"]`)
	f := newFixture(t, acc, cp)
	if _, err := f.reg.Member(ref1); err != nil {
		t.Fatal(err)
	}
	if got := acc.Providers[0].ExecConfig.Args; len(got) != 1 {
		t.Fatalf("provider args after a build: %v, want [--cluster]", got)
	}
	if got := f.built[0].ExecProvider.Args; strings.Join(got, " ") != "--cluster --name=member-1" {
		t.Fatalf("member exec args %v", got)
	}
}

// TestMemberWorkloadEvents: the member's filtered informers see our subset workloads and pass
// their events on as the hub UnitedDeployment's key; others are not listed.
func TestMemberWorkloadEvents(t *testing.T) {
	f := newFixture(t, testAccess(), profile("member-1", "https://127.0.0.1:6443", metav1.ConditionTrue))
	m, err := f.reg.Member(ref1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, m.HasSynced)
	ours := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-eu-abc", Labels: map[string]string{
		appsv1alpha1.LabelManagedBy: appsv1alpha1.ManagedByAgent, appsv1alpha1.LabelUnitedDeploymentName: "web"}}}
	if _, err := m.Kube.AppsV1().StatefulSets("shop").Create(context.Background(), ours, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case key := <-f.enqueued:
		if key != "shop/web" {
			t.Fatalf("enqueued %q, want shop/web", key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the member's subset workload")
	}
	waitFor(t, func() bool {
		l, _ := m.StatefulSets.StatefulSets("shop").List(labels.Everything())
		return len(l) == 1
	})
}

// TestTAppsRefusedWhenMemberLacksCRD: a member that does not serve TApps is refused, naming
// the cluster; the answer is kept for TAppRecheck (no discovery on every sync), then asked
// again.
func TestTAppsRefusedWhenMemberLacksCRD(t *testing.T) {
	f := newFixture(t, testAccess(), profile("member-1", "https://127.0.0.1:6443", metav1.ConditionTrue))
	m, err := f.reg.Member(ref1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m.now = func() time.Time { return now }
	kube := f.members["https://127.0.0.1:6443"]
	_, err = m.TApps()
	if err == nil || !strings.Contains(err.Error(), "cluster fleet/member-1 cannot run a TApp subset: it does not serve tapps.") {
		t.Fatalf("TApps on a member without the CRD: %v", err)
	}
	disc := m.Kube.Discovery().(*fakediscovery.FakeDiscovery)
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: appsv1alpha1.SchemeGroupVersion.String(), APIResources: []metav1.APIResource{{Name: "tapps", Namespaced: true, Kind: "TApp"}}}}
	now = now.Add(TAppRecheck - time.Second)
	if _, again := m.TApps(); again == nil || again.Error() != err.Error() {
		t.Fatalf("TApps within TAppRecheck: %v, want the kept refusal", again)
	}
	if got := discoveries(kube); got != 1 {
		t.Fatalf("%d discoveries within TAppRecheck, want 1", got)
	}
	now = now.Add(time.Second)
	if l, err := m.TApps(); err != nil || l == nil {
		t.Fatalf("TApps once served: %v, %v", l, err)
	}
	if got := discoveries(kube); got != 2 {
		t.Fatalf("%d discoveries, want 2", got)
	}
}

// discoveries counts the fake member's discovery calls ("get resource").
func discoveries(kube *kubefake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "resource" {
			n++
		}
	}
	return n
}

// TestTAppRefusalForgottenOnProfileChange: a change of the member's ClusterProfile (not a
// resync) makes it ask discovery again at once; a failed discovery is not kept.
func TestTAppRefusalForgottenOnProfileChange(t *testing.T) {
	cp := profile("member-1", "https://127.0.0.1:6443", metav1.ConditionTrue)
	f := newFixture(t, testAccess(), cp)
	var failing atomic.Bool
	kube := kubefake.NewClientset()
	kube.PrependReactor("get", "resource", func(core.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	f.members["https://127.0.0.1:6443"] = kube
	m, err := f.reg.Member(ref1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TApps(); err == nil {
		t.Fatal("TApps on a member without the CRD succeeded")
	}
	cp = cp.DeepCopy()
	cp.Labels = map[string]string{"x-k8s.io/cluster-manager": "ocm"}
	cp.ResourceVersion = "2" // the fake keeps the one it is given
	if _, err := f.cps.ApisV1alpha1().ClusterProfiles("fleet").Update(context.Background(), cp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.refused == nil
	})
	failing.Store(true)
	for range 2 {
		if _, err := m.TApps(); err == nil || !strings.Contains(err.Error(), "discovery of apps.workload.dev/v1alpha1 failed") {
			t.Fatalf("TApps with discovery failing: %v", err)
		}
	}
	if got := discoveries(kube); got != 3 {
		t.Fatalf("%d discoveries, want 3 (one refused, two failed and not kept)", got)
	}
}

func TestControlPlaneHealthy(t *testing.T) {
	if ok, _ := ControlPlaneHealthy(profile("a", "https://x", metav1.ConditionTrue)); !ok {
		t.Fatal("True condition is not healthy")
	}
	ok, msg := ControlPlaneHealthy(profile("a", "https://x", metav1.ConditionFalse))
	if ok || msg != "ClusterProfile fleet/a: ControlPlaneHealthy is False (Probe): probe said so" {
		t.Fatalf("False condition: %v %q", ok, msg)
	}
}

func TestRedact(t *testing.T) {
	for _, in := range []string{
		`Unauthorized: header Authorization: Bearer s3cr3t-t0ken was refused`,
		`exec plugin said {"kind":"ExecCredential","status":{"token":"s3cr3t-t0ken"}}`,
		`password=s3cr3t-t0ken`,
	} {
		if out := Redact(in); strings.Contains(out, "s3cr3t-t0ken") || !strings.Contains(out, "[redacted]") {
			t.Errorf("Redact(%q) = %q", in, out)
		}
	}
	if in := "dial tcp 127.0.0.1:6443: connect: connection refused"; Redact(in) != in {
		t.Errorf("Redact changed a message without credentials: %q", Redact(in))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMemberRebuiltAfterOutage: a member answering again after failing is built anew (its
// informers stopped, new ones list at once), so that no write is made from caches as old as
// the outage; the UnitedDeployments naming it are told both times.
func TestMemberRebuiltAfterOutage(t *testing.T) {
	f := newFixture(t, testAccess(), profile("member-1", "https://127.0.0.1:6443", metav1.ConditionTrue))
	var told atomic.Int32
	f.reg.OnProfile(func(ns, name string) { told.Add(1) })
	m, err := f.reg.Member(ref1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, m.HasSynced)
	kube := f.members["https://127.0.0.1:6443"]
	lists := func() int {
		n := 0
		for _, a := range kube.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "statefulsets" {
				n++
			}
		}
		return n
	}
	m.health.set("the member's API server did not answer: connection refused")
	if again, _ := f.reg.Member(ref1); again != m {
		t.Fatal("member rebuilt while still failing")
	}
	m.health.set("")
	n, err := f.reg.Member(ref1)
	if err != nil || n == m {
		t.Fatalf("Member after the outage: %p, %v; want a new member", n, err)
	}
	if m.ctx.Err() == nil || m.HasSynced() {
		t.Fatal("the old member's informers were not stopped, or it still says it has synced")
	}
	waitFor(t, n.HasSynced)
	if got := lists(); got != 2 {
		t.Fatalf("%d lists of statefulsets, want 2 (the first build, the rebuild)", got)
	}
	if got := told.Load(); got != 2 {
		t.Fatalf("OnProfile called %d times, want 2 (down, back)", got)
	}
}

// TestWatchErrorsOfAnUnreachableMember: a member informer's failures while the member does
// not answer are no error line (its outage is in the status); otherwise they are logged as
// client-go does, redacted.
func TestWatchErrorsOfAnUnreachableMember(t *testing.T) {
	f := newFixture(t, testAccess(), profile("member-1", "https://127.0.0.1:6443", metav1.ConditionTrue))
	m, err := f.reg.Member(ref1)
	if err != nil {
		t.Fatal(err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	r := cache.NewReflector(&cache.ListWatch{}, &appsv1.StatefulSet{}, cache.NewStore(cache.MetaNamespaceKeyFunc), 0)
	m.health.set("the member's API server did not answer: connection refused")
	m.watchError(ctx, r, errors.New("dial tcp 127.0.0.1:6443: connection refused, Bearer s3cr3t"))
	if out := buf.String(); strings.Contains(out, "ERROR") || strings.Contains(out, "s3cr3t") {
		t.Fatalf("log while the member is down:\n%s", out)
	}
	m.health.set("")
	m.watchError(ctx, r, errors.New("forbidden, Bearer s3cr3t"))
	if out := buf.String(); !strings.Contains(out, "ERROR") || !strings.Contains(out, "Failed to watch") || strings.Contains(out, "s3cr3t") {
		t.Fatalf("log of a failure while the member answers:\n%s", out)
	}
}
