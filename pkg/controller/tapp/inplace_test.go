package tapp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// podWrites are the actions on pods (any subresource) among got.
func podWrites(got []string) []string {
	var out []string
	for _, a := range got {
		if strings.Contains(a, " pods") {
			out = append(out, a)
		}
	}
	return out
}

// startUpdate syncs tp once to settle its status, then applies change to its template and
// returns the fixture, the new template's info and the TApp.
func startUpdate(t *testing.T, tp *appsv1alpha1.TApp, change func(*corev1.PodTemplateSpec)) (*fixture, *templateInfo, *appsv1alpha1.TApp) {
	t.Helper()
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()
	change(&tp.Spec.Template)
	tp.Generation++
	f.setTApp(tp)
	info, _ := newTemplateSet(tp).forInstance(0)
	return f, info, tp
}

// closeGateInCache shows in the cache the gate of pod name set False for hash at f's now.
func closeGateInCache(f *fixture, name, hash string) {
	p := f.cachedPod(name)
	p.Status.Conditions[0] = corev1.PodCondition{Type: appsv1alpha1.ConditionInPlaceUpdateReady, Status: corev1.ConditionFalse,
		Reason: reasonInPlaceUpdating, Message: inPlaceMessagePrefix + hash, LastTransitionTime: metav1.NewTime(f.clock.Now())}
	setReady(p, false)
	bumpRV(p)
	f.setPod(p)
}

// requeueAfter is when a sync of the cached state asks to run again.
func requeueAfter(f *fixture) time.Duration {
	tp := f.getTApp("web")
	pods, _ := f.c.getPods(tp)
	return computePlan(tp, newTemplateSet(tp), pods, f.clock.Now(), func(*corev1.Pod) bool { return false }).requeueAfter
}

func TestInPlaceGracePeriod(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.InPlaceUpdate.GracePeriodSeconds = 30
	f, info, tp := startUpdate(t, tp, func(s *corev1.PodTemplateSpec) { s.Spec.Containers[0].Image = "example.com/app:v2" })

	// First only the gate goes False; the sync comes back when the grace period is over.
	sameActions(t, f.sync("web"), "patch pods/status web-0", revisionCreated(t, tp), "update tapps/status web")
	if d := requeueAfter(f); d != 30*time.Second {
		t.Errorf("requeue after closing the gate: %v, want 30s", d)
	}
	f.feedStatus()
	sameActions(t, podWrites(f.sync("web"))) // the cache lags: nothing twice

	closeGateInCache(f, "web-0", info.hash)
	f.clock.Step(29 * time.Second)
	if got := podWrites(f.sync("web")); len(got) != 0 {
		t.Fatalf("pod writes %q before the grace period is over", got)
	}
	if d := requeueAfter(f); d != time.Second {
		t.Errorf("requeue during the grace period: %v, want 1s", d)
	}

	f.clock.Step(time.Second)
	sameActions(t, podWrites(f.sync("web")), "patch pods web-0")
	var patch struct {
		Spec struct{ Containers []map[string]string }
	}
	must(t, json.Unmarshal(f.findActions("patch", "pods")[0].(core.PatchAction).GetPatch(), &patch))
	if len(patch.Spec.Containers) != 1 || patch.Spec.Containers[0]["image"] != "example.com/app:v2" {
		t.Errorf("image patch %+v", patch.Spec.Containers)
	}
}

func TestWithoutReadinessGate(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.InPlaceUpdate.ReadinessGate = ptr.To(false)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)

	// web-1 is created with one write: no gate to open.
	sameActions(t, podWrites(f.sync("web")), "create pods web-1")
	created := createdPods(t, f)["web-1"]
	if len(created.Spec.ReadinessGates) != 0 || hasReadinessGate(f.cachedPod("web-0")) {
		t.Fatalf("pods made with readiness gates %v", created.Spec.ReadinessGates)
	}
	tp = f.feedStatus()
	f.setPod(runningPod(tp, 1))

	// An image change is one write per pod.
	tp.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, podWrites(f.sync("web")), "patch pods web-0")
}

func withCPU(cpu string) func(*corev1.PodTemplateSpec) {
	return func(s *corev1.PodTemplateSpec) {
		s.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
}

// reportResources makes the cache show pod name's spec carrying the template's hash and cpu, and
// its status reporting statusCPU.
func reportResources(f *fixture, name string, info *templateInfo, cpu, statusCPU string) {
	p := f.cachedPod(name)
	p.Labels[appsv1alpha1.LabelTemplateHash] = info.hash
	p.Labels[appsv1alpha1.LabelUniqHash] = info.uniqHash
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(statusCPU)}}
	bumpRV(p)
	f.setPod(p)
}

func TestResizeInPlace(t *testing.T) {
	tp := newTApp("web", 2)
	withCPU("100m")(&tp.Spec.Template)
	f, info, _ := startUpdate(t, tp, withCPU("200m"))

	sameActions(t, podWrites(f.sync("web")), "patch pods/status web-0", "patch pods/resize web-0", "patch pods web-0")
	if f.findActions("delete", "pods") != nil {
		t.Fatal("a resource change re-created the pod")
	}
	var patch struct {
		Spec struct {
			Containers []struct {
				Name      string
				Resources struct{ Requests map[string]string }
			}
		}
	}
	must(t, json.Unmarshal(f.findActions("patch", "pods/resize")[0].(core.PatchAction).GetPatch(), &patch))
	if c := patch.Spec.Containers; len(c) != 1 || c[0].Name != "main" || c[0].Resources.Requests["cpu"] != "200m" {
		t.Errorf("resize patch %+v", c)
	}
	f.feedStatus()

	// The spec shows the new resources, the kubelet not yet: the instance is updating and the
	// gate stays closed.
	closeGateInCache(f, "web-0", info.hash)
	reportResources(f, "web-0", info, "200m", "100m")
	if got := podWrites(f.sync("web")); len(got) != 0 {
		t.Fatalf("pod writes %q while the resize is not applied", got)
	}
	if st := f.findActions("update", "tapps/status"); len(st) == 1 {
		if s := f.feedStatus().Status; s.Statuses["0"] != appsv1alpha1.InstanceUpdating {
			t.Errorf("statuses %v while resizing, want 0 Updating", s.Statuses)
		}
	}

	// The kubelet runs the new resources: the gate opens.
	reportResources(f, "web-0", info, "200m", "200m")
	sameActions(t, podWrites(f.sync("web")), "patch pods/status web-0")
}

func TestResizeWithoutReadinessGate(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.InPlaceUpdate.ReadinessGate = ptr.To(false)
	withCPU("100m")(&tp.Spec.Template)
	f, _, _ := startUpdate(t, tp, withCPU("200m"))
	sameActions(t, podWrites(f.sync("web")), "patch pods/resize web-0", "patch pods web-0")
}

func TestResizeWithOtherChangeRecreates(t *testing.T) {
	tp := newTApp("web", 2)
	withCPU("100m")(&tp.Spec.Template)
	f, _, _ := startUpdate(t, tp, func(s *corev1.PodTemplateSpec) {
		withCPU("200m")(s)
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "fast"}}
	})
	sameActions(t, podWrites(f.sync("web")), "delete pods web-0")
}

func TestPodsOfImageOnlyUniqHashStayInPlace(t *testing.T) {
	tp := newTApp("web", 2)
	withCPU("100m")(&tp.Spec.Template)
	old, _ := newTemplateSet(tp).forInstance(0)
	f, _, _ := startUpdate(t, tp, func(s *corev1.PodTemplateSpec) { s.Spec.Containers[0].Image = "example.com/app:v2" })
	// As labelled by an agent whose uniq hash kept resources.
	p := f.cachedPod("web-0")
	p.Labels[appsv1alpha1.LabelUniqHash] = old.imageOnlyUniqHash
	bumpRV(p)
	f.setPod(p)
	sameActions(t, podWrites(f.sync("web")), "patch pods/status web-0", "patch pods web-0")
}

func TestResourcesApplied(t *testing.T) {
	tp := newTApp("web", 1)
	withCPU("1")(&tp.Spec.Template)
	p := runningPod(tp, 0)
	if !resourcesApplied(p) {
		t.Error("a status without resources (not reported) must count as applied")
	}
	p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}}
	if !resourcesApplied(p) {
		t.Error("1000m is 1 cpu")
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue})
	if resourcesApplied(p) {
		t.Error("a resize in progress is not applied")
	}
}
