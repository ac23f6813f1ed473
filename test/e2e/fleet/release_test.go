package fleet

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/clustermanager"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// A UnitedDeployment on the hub with one subset per member cluster (eu-1 in member-1, us-1 in
// member-2), released wave by wave by a Canary on the hub: the agent runs on the hub only and
// reaches the members through their ClusterProfiles, the provider file and the credential
// plugin, as under a real cluster manager.

const (
	udName     = "web"
	canaryName = "web-release"
	udReplicas = 4 // 2 a member
	v1Image    = "example.com/web:v1"
	v2Image    = "example.com/web:v2"
)

// waves maps each subset, and so each wave, to its member cluster.
var waves = []struct{ subset, member string }{{"eu-1", "member-1"}, {"us-1", "member-2"}}

type fleetEnv struct {
	*e2eenv.Env
	fleet   *localcluster.Fleet
	mgr     *clustermanager.Manager
	members map[string]kubernetes.Interface
	// verdict is what the web check's endpoint answers: {"ok": verdict}.
	verdict  atomic.Bool
	checkURL string
}

// setupFleet grants the test's namespace in every member, starts the agent on the hub with the
// provider file, and creates the UnitedDeployment on v1, waiting until both members run it. The
// test fails if the agent logs an error, also while a member is cut off (an unreachable member is
// a state the agent reports in status, not a fault to log).
func setupFleet(t *testing.T) *fleetEnv {
	t.Helper()
	f, mgr := fleet(t)
	e := &fleetEnv{Env: e2eenv.Setup(t), fleet: f, mgr: mgr, members: map[string]kubernetes.Interface{}}
	for _, name := range f.Names {
		if err := mgr.Grant(e.Ctx, f.Member(name), e.NS); err != nil {
			t.Fatal(err)
		}
		e.members[name] = kube(t, f.Member(name))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"ok": %t}`, e.verdict.Load())
	}))
	t.Cleanup(srv.Close)
	e.checkURL = srv.URL
	e.StartAgent("canary,uniteddeployment", "--clusterprofile-provider-file="+mgr.ProviderFile)

	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": udName}}
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": udName}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "web", Image: v1Image}},
		},
	}
	ud := &v1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: udName},
		Spec: v1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To[int32](udReplicas),
			Selector: sel,
			Template: v1alpha1.SubsetTemplate{StatefulSetTemplate: &v1alpha1.StatefulSetTemplateSpec{Spec: appsv1.StatefulSetSpec{
				Selector: sel, Template: tpl, ServiceName: udName, PodManagementPolicy: appsv1.ParallelPodManagement,
			}}},
		},
	}
	for _, w := range waves {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, v1alpha1.Subset{
			Name:              w.subset,
			ClusterProfileRef: &v1alpha1.ClusterProfileReference{Namespace: clustermanager.Namespace, Name: w.member},
		})
	}
	if _, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Create(e.Ctx, ud, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitUD("ready in both members on one revision", func(ud *v1alpha1.UnitedDeployment) bool {
		return ud.Status.ReadyReplicas == udReplicas && ud.Status.UpdatedReplicas == udReplicas &&
			ud.Status.CurrentRevision != "" && ud.Status.CurrentRevision == ud.Status.UpdatedRevision && allReachable(ud)
	})
	for _, w := range waves {
		e.waitImages(w.member, v1Image)
	}
	return e
}

func allReachable(ud *v1alpha1.UnitedDeployment) bool {
	n := 0
	for _, s := range ud.Status.SubsetStatuses {
		if s.Cluster != nil && s.Cluster.Reachable {
			n++
		}
	}
	return n == len(waves)
}

func (e *fleetEnv) waitUD(what string, cond func(*v1alpha1.UnitedDeployment) bool) *v1alpha1.UnitedDeployment {
	e.T.Helper()
	var last *v1alpha1.UnitedDeployment
	e2eenv.WaitFor(e.T, e.Ctx, "UnitedDeployment "+what, func(ctx context.Context) (bool, string, error) {
		ud, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Get(ctx, udName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		last = ud
		return ud.Status.ObservedGeneration >= ud.Generation && cond(ud), fmt.Sprintf("%+v", subsetStates(ud)), nil
	})
	return last
}

func subsetStates(ud *v1alpha1.UnitedDeployment) []string {
	var out []string
	for _, s := range ud.Status.SubsetStatuses {
		st := fmt.Sprintf("%s: %d/%d ready, %d updated, partition %d", s.Name, s.ReadyReplicas, s.Replicas, s.UpdatedReplicas, s.Partition)
		if c := s.Cluster; c != nil {
			st += fmt.Sprintf(", cluster %s reachable %t %q", c.ClusterProfile, c.Reachable, c.Message)
		}
		out = append(out, st)
	}
	return out
}

// images counts a member's pods of the UnitedDeployment by image.
func (e *fleetEnv) images(member string) (map[string]int, error) {
	pods, err := e.members[member].CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: "app=" + udName})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && e2eenv.PodReady(&p) {
			out[p.Spec.Containers[0].Image]++
		}
	}
	return out, nil
}

// waitImages waits until the member's two pods are ready on image.
func (e *fleetEnv) waitImages(member, image string) {
	e.T.Helper()
	e2eenv.WaitFor(e.T, e.Ctx, member+"'s pods on "+image, func(context.Context) (bool, string, error) {
		got, err := e.images(member)
		if err != nil {
			return false, err.Error(), nil
		}
		return got[image] == udReplicas/len(waves) && len(got) == 1, fmt.Sprint(got), nil
	})
}

func (e *fleetEnv) createCanary(steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	c := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: canaryName},
		Spec: v1alpha1.CanarySpec{
			Replicas:  udReplicas,
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: "UnitedDeployment", Name: udName},
			Steps:     steps,
			Analysis: []v1alpha1.AnalysisCheck{{
				Name:             "smoke",
				SuccessCondition: "result.ok == true",
				FailureCondition: "result.ok == false",
				Provider:         v1alpha1.AnalysisProvider{Web: &v1alpha1.WebProvider{URL: e.checkURL}},
			}},
		},
	}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
	e.waitCanary("holding the UnitedDeployment", func(c *v1alpha1.Canary) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil && c.Status.Target.StableRevision != ""
	})
	// Every member held at its pods (partition = its replicas) before a template changes, or a
	// member would take the change before its wave.
	e.waitUD("held by the Canary in every member", func(ud *v1alpha1.UnitedDeployment) bool {
		m := ud.Spec.UpdateStrategy.ManualUpdate
		if m == nil {
			return false
		}
		for _, w := range waves {
			if m.Partitions[w.subset] != udReplicas/int32(len(waves)) {
				return false
			}
		}
		return true
	})
}

func wave(subset string, pause *v1alpha1.CanaryPause, checks ...string) v1alpha1.CanaryStep {
	return v1alpha1.CanaryStep{Subsets: []string{subset}, Pause: pause, Analysis: checks}
}

func (e *fleetEnv) waitCanary(what string, cond func(*v1alpha1.Canary) bool) *v1alpha1.Canary {
	e.T.Helper()
	var last *v1alpha1.Canary
	var ud *v1alpha1.UnitedDeployment
	e2eenv.WaitFor(e.T, e.Ctx, "Canary "+what, func(ctx context.Context) (bool, string, error) {
		c, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(ctx, canaryName, metav1.GetOptions{})
		if err == nil {
			last = c
			ud, err = e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Get(ctx, udName, metav1.GetOptions{})
		}
		state := fmt.Sprintf("error %v", err)
		if last != nil && ud != nil {
			state = fmt.Sprintf("%s (last error %v)\nUnitedDeployment: %v", describe(last), err, subsetStates(ud))
		}
		return err == nil && last.Status.ObservedGeneration == last.Generation && cond(last), state, nil
	})
	return last
}

func describe(c *v1alpha1.Canary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s, batch %d, message %q", c.Status.Phase, c.Status.CurrentBatch, c.Status.Message)
	for _, bs := range c.Status.Batches {
		fmt.Fprintf(&b, "; batch %d %s", bs.Index, bs.State)
	}
	for _, cond := range c.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s (%s) %q", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	return b.String()
}

// setImage changes the template's image, as a user's kubectl patch would.
func (e *fleetEnv) setImage(image string) {
	e.T.Helper()
	patch := fmt.Appendf(nil, `[{"op":"replace","path":"/spec/template/statefulSetTemplate/spec/template/spec/containers/0/image","value":%q}]`, image)
	if _, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Patch(e.Ctx, udName, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

func released(v1 string) func(*v1alpha1.Canary) bool {
	return func(c *v1alpha1.Canary) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision != v1 && c.Status.Target.StableRevision == c.Status.Target.UpdateRevision
	}
}

func baking(batch int32) func(*v1alpha1.Canary) bool {
	return func(c *v1alpha1.Canary) bool {
		return c.Status.CurrentBatch == batch && len(c.Status.Batches) >= int(batch) && c.Status.Batches[batch-1].State == v1alpha1.BatchBaking
	}
}

// Wave by wave: member-1 under a timed pause, then member-2 under a passing check; while the
// first wave bakes the second member is untouched.
func TestFleetReleaseWaveByWave(t *testing.T) {
	e := setupFleet(t)
	e.verdict.Store(true)
	e.createCanary(wave("eu-1", &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: 10 * time.Second}}), wave("us-1", nil, "smoke"))
	v1 := e.waitCanary("holding", func(c *v1alpha1.Canary) bool { return c.Status.Target != nil }).Status.Target.StableRevision

	e.setImage(v2Image)
	e.waitCanary("wave 1 (member-1) to bake", baking(1))
	e.waitImages("member-1", v2Image)
	if got, err := e.images("member-2"); err != nil || got[v1Image] != 2 || len(got) != 1 {
		t.Errorf("member-2 during wave 1's pause: %v %v, want its 2 pods on v1 only", got, err)
	}
	e.waitCanary("the release to complete", released(v1))
	e.waitImages("member-2", v2Image)
	e.waitImages("member-1", v2Image)
	e.WaitEvent(v1alpha1.EventAnalysisPassed)
}

// A failing check at wave 2 (run once member-2 is released, as a step's analysis is) rolls the
// release back by itself: member-1, released in wave 1, and member-2 get the stable template
// back, and so does the UnitedDeployment.
func TestFleetFailingCheckRollsBackWave1(t *testing.T) {
	e := setupFleet(t)
	e.verdict.Store(false)
	e.createCanary(wave("eu-1", nil), wave("us-1", nil, "smoke"))

	e.setImage(v2Image)
	c := e.waitCanary("to roll back by itself", func(c *v1alpha1.Canary) bool {
		return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.Abort != nil
	})
	if a := c.Status.Abort; a.Reason != v1alpha1.ReasonAnalysisFailed || a.Step != 2 {
		t.Errorf("abort %+v, want AnalysisFailed at step 2", a)
	}
	e.waitImages("member-1", v1Image)
	e.waitImages("member-2", v1Image)
	ud := e2eenv.Get(t, e.Ctx, e.Apps.AppsV1alpha1().UnitedDeployments(e.NS), udName)
	if img := ud.Spec.Template.StatefulSetTemplate.Spec.Template.Spec.Containers[0].Image; img != v1Image {
		t.Errorf("the UnitedDeployment's template after the rollback: %s, want %s", img, v1Image)
	}
	e.WaitEvent(v1alpha1.EventTemplateRestored)
}

// member-2's API server stopped while wave 1 bakes: the release holds at wave 2 (the
// UnitedDeployment's status says member-2 is unreachable and the Canary names it), never counts
// it as passed, and goes on when the API server is back.
func TestFleetMemberUnreachableHoldsWave(t *testing.T) {
	e := setupFleet(t)
	e.verdict.Store(true)
	e.createCanary(wave("eu-1", &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: 5 * time.Second}}), wave("us-1", nil))
	v1 := e.waitCanary("holding", func(c *v1alpha1.Canary) bool { return c.Status.Target != nil }).Status.Target.StableRevision

	e.setImage(v2Image)
	e.waitCanary("wave 1 (member-1) to bake", baking(1))
	member := e.fleet.Member("member-2")
	if err := member.StopComponents(localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted { // the next test needs the member
			_ = member.StartComponents(context.Background(), localcluster.APIServer)
		}
	})
	e.waitUD("to report member-2 unreachable", func(ud *v1alpha1.UnitedDeployment) bool {
		for _, s := range ud.Status.SubsetStatuses {
			if s.Name == "us-1" && s.Cluster != nil && !s.Cluster.Reachable && s.Cluster.Message != "" {
				return true
			}
		}
		return false
	})
	held := e.waitCanary("to hold at wave 2 naming member-2", func(c *v1alpha1.Canary) bool {
		return c.Status.CurrentBatch == 2 && strings.Contains(describe(c), "member-2")
	})
	// Held well past wave 1's pause: still at wave 2, never passed.
	time.Sleep(5 * time.Second)
	c := e2eenv.Get(t, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), canaryName)
	if c.Status.Phase == v1alpha1.CanaryCompleted || c.Status.CurrentBatch != 2 || len(c.Status.Batches) > 1 && c.Status.Batches[1].State == v1alpha1.BatchCompleted {
		t.Fatalf("with member-2 unreachable the release moved on: %s (held at: %s)", describe(c), describe(held))
	}

	if err := member.StartComponents(e.Ctx, localcluster.APIServer); err != nil {
		t.Fatal(err)
	}
	// The member's scheduler and kwok (its fake kubelet) do not take up new pods once its API
	// server has been restarted (docs/testing.md, "A fleet"); started again, they do.
	if err := member.RestartComponents(e.Ctx, 0, localcluster.Scheduler, localcluster.Kwok); err != nil {
		t.Fatal(err)
	}
	restarted = true
	e.waitCanary("the release to complete once member-2 is back", released(v1))
	e.waitImages("member-2", v2Image)
	e.waitImages("member-1", v2Image)
}

// Deleting the UnitedDeployment removes its workloads from every member (through the agent's
// finalizer: owner references cannot cross clusters).
func TestFleetDeleteRemovesMemberWorkloads(t *testing.T) {
	e := setupFleet(t)
	for _, w := range waves {
		if n := e.statefulSets(w.member); n == 0 {
			t.Fatalf("%s has no StatefulSet of the UnitedDeployment", w.member)
		}
	}
	if err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Delete(e.Ctx, udName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.WaitFor(t, e.Ctx, "the UnitedDeployment gone from the hub and its StatefulSets from the members", func(ctx context.Context) (bool, string, error) {
		_, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Get(ctx, udName, metav1.GetOptions{})
		left := map[string]int{}
		for _, w := range waves {
			if n := e.statefulSets(w.member); n > 0 {
				left[w.member] = n
			}
		}
		return apierrors.IsNotFound(err) && len(left) == 0, fmt.Sprintf("hub: %v; left in members: %v", err, left), nil
	})
}

// statefulSets counts the member's StatefulSets in the test's namespace.
func (e *fleetEnv) statefulSets(member string) int {
	e.T.Helper()
	list, err := e.members[member].AppsV1().StatefulSets(e.NS).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return len(list.Items)
}
