package tapp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// reportResources makes the cache show pod name's spec with cpu (as after a resize, which
// changes no label), and its status reporting statusCPU.
func reportResources(f *fixture, name string, cpu, statusCPU string) {
	p := f.cachedPod(name)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(statusCPU)}}
	bumpRV(p)
	f.setPod(p)
}

// relabelled reports the hash labels a pods/status patch writes.
func relabelled(t *testing.T, a core.Action) map[string]string {
	t.Helper()
	var patch struct {
		Metadata struct{ Labels map[string]string }
	}
	must(t, json.Unmarshal(a.(core.PatchAction).GetPatch(), &patch))
	return patch.Metadata.Labels
}

// A resize-only update with the gate is 3 writes: gate False, pods/resize, and gate True with
// the new hash labels (pods/resize cannot write labels; pods/status can).
func TestResizeInPlace(t *testing.T) {
	tp := newTApp("web", 2)
	withCPU("100m")(&tp.Spec.Template)
	f, info, _ := startUpdate(t, tp, withCPU("200m"))

	sameActions(t, podWrites(f.sync("web")), "patch pods/status web-0", "patch pods/resize web-0")
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
	reportResources(f, "web-0", "200m", "100m")
	if got := podWrites(f.sync("web")); len(got) != 0 {
		t.Fatalf("pod writes %q while the resize is not applied", got)
	}
	if st := f.findActions("update", "tapps/status"); len(st) == 1 {
		if s := f.feedStatus().Status; s.Statuses["0"] != appsv1alpha1.InstanceUpdating {
			t.Errorf("statuses %v while resizing, want 0 Updating", s.Statuses)
		}
	}

	// The kubelet runs the new resources: the gate opens, and the same patch labels the pod
	// with the new template's hashes.
	reportResources(f, "web-0", "200m", "200m")
	f.clearActions()
	sameActions(t, podWrites(f.sync("web")), "patch pods/status web-0")
	labels := relabelled(t, f.findActions("patch", "pods/status")[0])
	if labels[appsv1alpha1.LabelTemplateHash] != info.hash || labels[appsv1alpha1.LabelUniqHash] != info.uniqHash ||
		labels[appsv1alpha1.LabelResizeHash] != info.resizeOnly {
		t.Errorf("gate opened with labels %v, want the hashes of %s", labels, info.hash)
	}
}

// Without the gate a resize-only update is the resize alone: the pod keeps its labels, and its
// spec's resources tell that it runs the new template; it is updated once its status reports
// them.
func TestResizeWithoutReadinessGate(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.InPlaceUpdate.ReadinessGate = ptr.To(false)
	withCPU("100m")(&tp.Spec.Template)
	f, info, _ := startUpdate(t, tp, withCPU("200m"))
	sameActions(t, podWrites(f.sync("web")), "patch pods/resize web-0")
	f.feedStatus()
	oldHash := f.cachedPod("web-0").Labels[appsv1alpha1.LabelTemplateHash]
	if oldHash == info.hash {
		t.Fatal("fixture: the pod carries the new hash already")
	}

	// The spec has the new resources, the status not yet: updating, nothing to write (web-1,
	// still on the old resources, waits: maxUnavailable 1).
	reportResources(f, "web-0", "200m", "100m")
	f.clearActions()
	if got := podWrites(f.sync("web")); len(got) != 0 {
		t.Fatalf("pod writes %q while the resize is not applied", got)
	}
	if st := f.findActions("update", "tapps/status"); len(st) == 1 {
		if s := f.feedStatus().Status; s.Statuses["0"] != appsv1alpha1.InstanceUpdating || s.UpdatedReplicas != 0 {
			t.Errorf("statuses %v, updated %d while resizing, want 0 Updating, 0 updated", s.Statuses, s.UpdatedReplicas)
		}
	}

	// Applied: web-0 counts as updated, with its old labels, and web-1 is resized next.
	reportResources(f, "web-0", "200m", "200m")
	f.clearActions()
	sameActions(t, podWrites(f.sync("web")), "patch pods/resize web-1")
	if s := f.feedStatus().Status; s.Statuses["0"] != appsv1alpha1.InstanceRunningNow || s.UpdatedReplicas != 1 {
		t.Errorf("statuses %v, updated %d after the resize, want 0 Running, 1 updated", s.Statuses, s.UpdatedReplicas)
	}
	if h := f.cachedPod("web-0").Labels[appsv1alpha1.LabelTemplateHash]; h != oldHash {
		t.Errorf("label changed to %s", h)
	}
}

// A resize made without a label change is undone when the template goes back: the label names
// the template again, the resources do not match it.
func TestResizeRevertedWithoutReadinessGate(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.InPlaceUpdate.ReadinessGate = ptr.To(false)
	tp.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	withCPU("100m")(&tp.Spec.Template)
	f, _, tp := startUpdate(t, tp, withCPU("200m"))
	sameActions(t, podWrites(f.sync("web")), "patch pods/resize web-0", "patch pods/resize web-1")
	tp = f.feedStatus()
	reportResources(f, "web-0", "200m", "200m")
	reportResources(f, "web-1", "200m", "200m")
	f.clearActions()
	if got := podWrites(f.sync("web")); len(got) != 0 {
		t.Fatalf("pod writes %q after the resize", got)
	}
	tp = f.feedStatus()

	withCPU("100m")(&tp.Spec.Template)
	tp.Generation++
	f.setTApp(tp)
	f.clearActions()
	sameActions(t, podWrites(f.sync("web")), "patch pods/resize web-0", "patch pods/resize web-1")
}

// A pod made before the resize hash label existed, whose old template is gone, moves by the
// resize and a label patch (which adds the label): 2 writes, once.
func TestResizeOfPodWithoutResizeHash(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.InPlaceUpdate.ReadinessGate = ptr.To(false)
	withCPU("100m")(&tp.Spec.Template)
	f, info, _ := startUpdate(t, tp, withCPU("200m"))
	p := f.cachedPod("web-0")
	delete(p.Labels, appsv1alpha1.LabelResizeHash)
	bumpRV(p)
	f.setPod(p)
	f.clearActions()
	sameActions(t, podWrites(f.sync("web")), "patch pods/resize web-0", "patch pods web-0")
	labels := relabelled(t, f.findActions("patch", "pods")[0])
	if labels[appsv1alpha1.LabelResizeHash] != info.resizeOnly || labels[appsv1alpha1.LabelTemplateHash] != info.hash {
		t.Errorf("label patch %v", labels)
	}
}

// A LimitRange may add resources the template does not set: they do not make the pod differ
// from its template.
func TestResourcesMatchIgnoresAddedResources(t *testing.T) {
	tp := newTApp("web", 1)
	tp.Spec.UpdateStrategy.InPlaceUpdate.ReadinessGate = ptr.To(false)
	withCPU("100m")(&tp.Spec.Template)
	s := newTemplateSet(tp)
	info, _ := s.forInstance(0)
	p := runningPod(tp, 0)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	if !s.runs(p, info) {
		t.Error("a defaulted memory limit makes the pod differ from its template")
	}
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1")
	if !s.runs(p, info) {
		t.Error("0.1 cpu is 100m")
	}
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("150m")
	if s.runs(p, info) {
		t.Error("a pod without the gate at 150m runs a template of 100m")
	}
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
