package canary

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// A Canary with a UnitedDeployment targetRef releases it zone by zone (docs/canary-targets.md): steps name
// the subsets they release, the agent sets the per-subset partitions, the subsets' StatefulSets
// update their pods. A pod watcher fails the test the moment a zone's pod moves to an image
// before every pod of the zones released before it ran that image, a zone has fewer than its
// pods − 1 ready (each subset StatefulSet's maxUnavailable) or a pod name appears twice.

const (
	udName     = "web"
	udReplicas = 6 // 2 per zone
)

var udZones = []string{"zone-a", "zone-b", "zone-c"}

type zonesEnv struct {
	*env
	armed atomic.Bool
	mu    sync.Mutex
	ran   map[string]map[string]bool // image → pods that ran it
}

func setupZones(t *testing.T, watchPods bool) *zonesEnv {
	t.Helper()
	e := &zonesEnv{env: &env{Env: e2eenv.Setup(t)}, ran: map[string]map[string]bool{}}
	e.startZonesAgent()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": udName}}
	tpl := podTemplate(map[string]string{"app": udName}, "example.com/web:v1")
	tpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
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
	for _, z := range udZones {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, v1alpha1.Subset{Name: z, NodeSelectorTerm: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: localcluster.ZoneLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}},
		}})
	}
	if _, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Create(e.Ctx, ud, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitZones("6 ready pods on one revision", func(ud *v1alpha1.UnitedDeployment) bool {
		return ud.Status.ReadyReplicas == udReplicas && ud.Status.UpdatedReplicas == udReplicas &&
			ud.Status.CurrentRevision != "" && ud.Status.CurrentRevision == ud.Status.UpdatedRevision
	})
	if watchPods { // a test in which pods change
		w := e.WatchPods("zone order", "app="+udName, e.checkZones)
		e.armed.Store(true)
		t.Cleanup(func() { w.Verify(t) })
	}
	return e
}

func (e *zonesEnv) startZonesAgent() { e.agent = e.StartAgentLoggingErrors("canary,uniteddeployment") }

// checkZones is the invariant: no zone takes an image before the zones released before it.
func (e *zonesEnv) checkZones(pods map[types.UID]*corev1.Pod) []string {
	if !e.armed.Load() {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	seed := len(e.ran) == 0
	byZone, names := map[string][]string{}, map[string]int{}
	ready := map[string]int{}
	for _, p := range pods {
		z := p.Labels[v1alpha1.LabelSubsetName]
		byZone[z] = append(byZone[z], p.Name)
		names[p.Name]++
		if e2eenv.PodReady(p) && p.DeletionTimestamp == nil {
			ready[z]++
		}
	}
	var out []string
	for _, p := range pods {
		img := p.Spec.Containers[0].Image
		if e.ran[img] == nil {
			e.ran[img] = map[string]bool{}
		}
		if e.ran[img][p.Name] {
			continue
		}
		if !seed {
			for _, earlier := range udZones {
				if earlier == p.Labels[v1alpha1.LabelSubsetName] {
					break
				}
				for _, n := range byZone[earlier] {
					if !e.ran[img][n] {
						out = append(out, fmt.Sprintf("pod %s runs %s before pod %s of %s, released before it, did", p.Name, img, n, earlier))
					}
				}
			}
		}
		e.ran[img][p.Name] = true
	}
	for _, z := range udZones {
		if ready[z] < udReplicas/3-1 {
			out = append(out, fmt.Sprintf("%s: %d ready pods < its pods − maxUnavailable = %d", z, ready[z], udReplicas/3-1))
		}
	}
	for n, c := range names {
		if c > 1 {
			out = append(out, fmt.Sprintf("pod %s twice", n))
		}
	}
	if out != nil {
		e.Cancel()
	}
	return out
}

func (e *zonesEnv) unitedDeployment() *v1alpha1.UnitedDeployment {
	e.T.Helper()
	return e2eenv.Get(e.T, e.Ctx, e.Apps.AppsV1alpha1().UnitedDeployments(e.NS), udName)
}

func (e *zonesEnv) waitZones(what string, cond func(*v1alpha1.UnitedDeployment) bool) {
	e.T.Helper()
	e.Eventually("UnitedDeployment "+what, func() (bool, string) {
		ud, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Get(e.Ctx, udName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ud.Status.ObservedGeneration >= ud.Generation && cond(ud), fmt.Sprintf("%+v partitions %v", ud.Status, partitionsOf(ud))
	})
}

func partitionsOf(ud *v1alpha1.UnitedDeployment) map[string]int32 {
	if m := ud.Spec.UpdateStrategy.ManualUpdate; m != nil {
		return m.Partitions
	}
	return nil
}

// heldZones reports whether every zone keeps its 2 pods on the current revision.
func heldZones(ud *v1alpha1.UnitedDeployment) bool {
	p := partitionsOf(ud)
	return p["zone-a"] == 2 && p["zone-b"] == 2 && p["zone-c"] == 2
}

// setZonesImage changes the image of the template, as a user's kubectl patch would.
func (e *zonesEnv) setZonesImage(image string) {
	e.T.Helper()
	patch := fmt.Appendf(nil, `[{"op":"replace","path":"/spec/template/statefulSetTemplate/spec/template/spec/containers/0/image","value":%q}]`, image)
	if _, err := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS).Patch(e.Ctx, udName, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// zoneImages counts the pods of each zone by image.
func (e *zonesEnv) zoneImages() map[string]map[string]int {
	e.T.Helper()
	pods, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: "app=" + udName})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, p := range pods.Items {
		z := p.Labels[v1alpha1.LabelSubsetName]
		if out[z] == nil {
			out[z] = map[string]int{}
		}
		out[z][p.Spec.Containers[0].Image]++
	}
	return out
}

func zoneStep(zone string, pause *v1alpha1.CanaryPause, checks ...string) v1alpha1.CanaryStep {
	return v1alpha1.CanaryStep{Subsets: []string{zone}, Pause: pause, Analysis: checks}
}

func (e *zonesEnv) createZonesCanary(checks []v1alpha1.AnalysisCheck, steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	e.createTargetedCanary(name, "UnitedDeployment", udName, udReplicas, checks, steps...)
}

func (e *zonesEnv) waitHolding() *v1alpha1.Canary {
	e.T.Helper()
	return e.waitProgressing(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
}

// Zone by zone: zone-a with a timed pause, zone-b under a passing Job check, then zone-c; the
// next release's check fails at zone-b and the agent writes the stable template back by itself.
func TestUnitedDeploymentTargetZoneByZone(t *testing.T) {
	e := setupZones(t, true)
	e.createZonesCanary([]v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-succeed")},
		zoneStep("zone-a", pauseFor(10*time.Second)),
		zoneStep("zone-b", nil, "smoke"),
		zoneStep("zone-c", nil))
	c := e.waitHolding()
	e.waitZones("held", heldZones)
	v1 := c.Status.Target.StableRevision

	e.setZonesImage("example.com/web:v2")
	e.waitCanary("step 1 to bake", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 1 && len(c.Status.Batches) == 3 && c.Status.Batches[0].State == v1alpha1.BatchBaking
	})
	got := e.zoneImages()
	if got["zone-a"]["example.com/web:v2"] != 2 || got["zone-b"]["example.com/web:v1"] != 2 || got["zone-c"]["example.com/web:v1"] != 2 {
		t.Errorf("during step 1's pause: images %v, want zone-a on v2 only", got)
	}
	c = e.waitCanary("release 1 to complete", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision != v1 && c.Status.Target.StableRevision == c.Status.Target.UpdateRevision
	})
	e.waitZones("held again after release 1", heldZones)
	for _, z := range udZones {
		if n := e.zoneImages()[z]["example.com/web:v2"]; n != 2 {
			t.Errorf("after release 1: %s has %d pods on v2", z, n)
		}
	}
	e.WaitEvent(v1alpha1.EventAnalysisPassed)
	v2 := c.Status.Target.StableRevision

	e.patchSpec(`{"analysis":[` + mustJSON(t, jobCheck("example.com/smoke:job-fail")) + `]}`)
	e.setZonesImage("example.com/web:v3")
	c = e.waitCanary("release 2 to roll back by itself", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.Abort != nil
	})
	if a := c.Status.Abort; a.Reason != v1alpha1.ReasonAnalysisFailed || a.Step != 2 {
		t.Errorf("abort %+v, want AnalysisFailed at step 2", a)
	}
	ud := e.unitedDeployment()
	if img := ud.Spec.Template.StatefulSetTemplate.Spec.Template.Spec.Containers[0].Image; img != "example.com/web:v2" || ud.Status.CurrentRevision != v2 {
		t.Errorf("after the rollback: template image %s, current revision %s (want %s)", img, ud.Status.CurrentRevision, v2)
	}
	for _, z := range udZones {
		if n := e.zoneImages()[z]["example.com/web:v2"]; n != 2 {
			t.Errorf("after the rollback: %s has %d pods on v2", z, n)
		}
	}
	e.WaitEvent(v1alpha1.EventTemplateRestored)
}

// The agent killed during zone-a's pause and started again finishes the release: zone-b, then
// zone-c in the final step the agent adds (no step names it).
func TestUnitedDeploymentTargetAgentKilledMidRelease(t *testing.T) {
	e := setupZones(t, true)
	e.createZonesCanary(nil, zoneStep("zone-a", pauseFor(15*time.Second)), zoneStep("zone-b", nil))
	e.waitHolding()
	e.setZonesImage("example.com/web:v2")
	e.waitCanary("step 1 to bake", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 1 && c.Status.Batches[0].State == v1alpha1.BatchBaking
	})
	e.agent.Kill()
	if p := partitionsOf(e.unitedDeployment()); p["zone-a"] != 0 || p["zone-b"] != 2 || p["zone-c"] != 2 {
		t.Fatalf("partitions %v while the agent is down, want zone-a released only", p)
	}
	e.startZonesAgent()
	e.waitCanary("the release to complete", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.CurrentBatch == 3
	})
	e.waitZones("held again", heldZones)
}

// The schema refuses steps[].subsets without a UnitedDeployment target, and a step with both
// replicas and subsets; the agent refuses a subset the UnitedDeployment does not have.
func TestUnitedDeploymentTargetRefusals(t *testing.T) {
	e := setupZones(t, false)
	bad := func(kind string, s v1alpha1.CanaryStep) *v1alpha1.Canary {
		return &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: v1alpha1.CanarySpec{Replicas: udReplicas,
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: kind, Name: udName}, Steps: []v1alpha1.CanaryStep{s}}}
	}
	both := zoneStep("zone-a", nil)
	both.Replicas = intstr.FromInt32(2)
	for want, c := range map[string]*v1alpha1.Canary{
		"needs targetRef of kind UnitedDeployment": bad("StatefulSet", zoneStep("zone-a", nil)),
		"each step sets exactly one of replicas":   bad("UnitedDeployment", both),
	} {
		_, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{})
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create: %v; want Invalid containing %q", err, want)
		}
	}
	e.createZonesCanary(nil, zoneStep("zone-x", nil))
	c := e.waitCanary("Degraded InvalidSpec", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryDegraded
	})
	if !strings.Contains(describe(c), `names "zone-x", which is not a subset of UnitedDeployment "web"`) {
		t.Errorf("Degraded: %s", describe(c))
	}
	if p := partitionsOf(e.unitedDeployment()); len(p) != 0 {
		t.Errorf("a refused Canary set partitions %v", p)
	}
}
