package tapp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func createdPods(t *testing.T, f *fixture) map[string]*corev1.Pod {
	t.Helper()
	out := map[string]*corev1.Pod{}
	for _, a := range f.findActions("create", "pods") {
		p := a.(core.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		out[p.Name] = p
	}
	return out
}

// observeCreated puts the pods the last sync created into the cache as the API server would
// return them (with a UID), Pending and unscheduled.
func observeCreated(t *testing.T, f *fixture, pods map[string]*corev1.Pod) {
	t.Helper()
	for name, p := range pods {
		p.UID = types.UID("pod-uid-" + name)
		p.ResourceVersion = "20"
		p.CreationTimestamp = metav1.NewTime(f.clock.Now())
		p.Status.Phase = corev1.PodPending
		f.setPod(p)
	}
}

func TestScaleUp(t *testing.T) {
	tp := newTApp("web", 3)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil)

	// Each new pod's readiness gate is opened right after its creation.
	got := f.sync("web")
	sameActions(t, got, "create pods web-0", "create pods web-1", "create pods web-2",
		"patch pods/status web-0", "patch pods/status web-1", "patch pods/status web-2", "update tapps/status web")
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		if index(got, "create pods "+name) > index(got, "patch pods/status "+name) {
			t.Errorf("gate of %s opened before its creation: %q", name, got)
		}
	}
	checkGatePatches(t, f, corev1.ConditionTrue)

	info, _ := newTemplateSet(tp).forInstance(0)
	pods := createdPods(t, f)
	for id, name := range []string{"web-0", "web-1", "web-2"} {
		p := pods[name]
		wantLabels := map[string]string{
			"app":                          "web",
			appsv1alpha1.LabelManagedBy:    appsv1alpha1.ManagedByAgent,
			appsv1alpha1.LabelTAppName:     "web",
			appsv1alpha1.LabelInstanceID:   []string{"0", "1", "2"}[id],
			appsv1alpha1.LabelTemplateHash: info.hash,
			appsv1alpha1.LabelUniqHash:     info.uniqHash,
			appsv1alpha1.LabelResizeHash:   info.resizeOnly,
		}
		for k, v := range wantLabels {
			if p.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", name, k, p.Labels[k], v)
			}
		}
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.UID != tp.UID || ref.Kind != "TApp" || ref.APIVersion != "apps.workload.dev/v1alpha1" {
			t.Errorf("%s: controller reference %+v", name, ref)
		}
		if !hasReadinessGate(p) {
			t.Errorf("%s: no %s readiness gate", name, appsv1alpha1.ConditionInPlaceUpdateReady)
		}
		if p.Spec.Containers[0].Image != "example.com/app:v1" {
			t.Errorf("%s: image %s", name, p.Spec.Containers[0].Image)
		}
	}
	st := f.feedStatus().Status
	if st.Replicas != 0 || st.ScaleLabelSelector != "app=web" || st.ObservedGeneration != 1 || st.AppStatus != appsv1alpha1.AppPending {
		t.Errorf("status after create: %+v", st)
	}
	for _, id := range []string{"0", "1", "2"} {
		if st.Statuses[id] != appsv1alpha1.InstanceNotCreated {
			t.Errorf("statuses[%s] = %s", id, st.Statuses[id])
		}
	}
	if ev := f.events(); len(ev) != 3 || !hasEvent(ev, "Normal SuccessfulCreate Created pod web-") {
		t.Errorf("events %q, want three SuccessfulCreate", ev)
	}

	// The cache has not seen the pods yet: the expectations hold the next sync back, so no
	// duplicate is created.
	sameActions(t, f.sync("web"))

	// Creations observed: pods are Pending; nothing to create, only the status changes. The
	// gate patch of web-2 failed (say): its gate is not True.
	for name, p := range pods {
		if name != "web-2" {
			p.Status.Conditions = []corev1.PodCondition{{Type: appsv1alpha1.ConditionInPlaceUpdateReady, Status: corev1.ConditionTrue}}
		}
	}
	observeCreated(t, f, pods)
	sameActions(t, f.sync("web"), "update tapps/status web")
	st = f.feedStatus().Status
	if st.Replicas != 3 || st.Statuses["2"] != appsv1alpha1.InstancePending {
		t.Errorf("status after observing pods: %+v", st)
	}

	// The kubelet runs them: the agent opens the gate that is still closed.
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		p := f.cachedPod(name)
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image})
		}
		bumpRV(p)
		f.setPod(p)
	}
	sameActions(t, f.sync("web"), "patch pods/status web-2", "update tapps/status web")
	checkGatePatches(t, f, corev1.ConditionTrue)
	f.feedStatus()
	// Until the cache shows the patched pods, the gates are not patched again.
	sameActions(t, f.sync("web"))
}

func index(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// checkGatePatches checks that every pods/status patch of the last sync sets the in-place gate
// to status, with the pod's UID as a precondition.
func checkGatePatches(t *testing.T, f *fixture, status corev1.ConditionStatus) {
	t.Helper()
	for _, a := range f.findActions("patch", "pods/status") {
		var patch struct {
			Metadata struct{ UID string }
			Status   struct{ Conditions []corev1.PodCondition }
		}
		must(t, json.Unmarshal(a.(core.PatchAction).GetPatch(), &patch))
		if patch.Metadata.UID == "" || len(patch.Status.Conditions) != 1 || patch.Status.Conditions[0].Type != appsv1alpha1.ConditionInPlaceUpdateReady || patch.Status.Conditions[0].Status != status {
			t.Errorf("gate patch %s", a.(core.PatchAction).GetPatch())
		}
	}
}

func TestScaleUpCreatesClaimsFirst(t *testing.T) {
	tp := newTApp("db", 3)
	tp.Spec.ServiceName = "db-headless"
	tp.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
	tp.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	kept := newPVC(tp, &tp.Spec.VolumeClaimTemplates[0], 1)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, []*corev1.PersistentVolumeClaim{kept})

	got := f.sync("db")
	sameActions(t, got,
		"create persistentvolumeclaims data-db-0", "create persistentvolumeclaims data-db-2",
		"create pods db-0", "create pods db-1", "create pods db-2",
		"patch pods/status db-0", "patch pods/status db-1", "patch pods/status db-2", "update tapps/status db")
	index := map[string]int{}
	for i, a := range got {
		index[a] = i
	}
	for _, id := range []string{"0", "2"} {
		if index["create persistentvolumeclaims data-db-"+id] > index["create pods db-"+id] {
			t.Errorf("claim of instance %s created after its pod: %q", id, got)
		}
	}
	for _, a := range f.findActions("create", "persistentvolumeclaims") {
		pvc := a.(core.CreateAction).GetObject().(*corev1.PersistentVolumeClaim)
		if pvc.Labels[appsv1alpha1.LabelManagedBy] != appsv1alpha1.ManagedByAgent || pvc.Labels[appsv1alpha1.LabelTAppName] != "db" || len(pvc.OwnerReferences) != 0 {
			t.Errorf("claim %s: labels %v owners %v", pvc.Name, pvc.Labels, pvc.OwnerReferences)
		}
	}
	for name, p := range createdPods(t, f) {
		if p.Spec.Hostname != name || p.Spec.Subdomain != "db-headless" {
			t.Errorf("%s: hostname %q subdomain %q", name, p.Spec.Hostname, p.Spec.Subdomain)
		}
		if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim == nil ||
			p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-"+name {
			t.Errorf("%s: volumes %+v, want the template's data volume replaced by claim data-%s", name, p.Spec.Volumes, name)
		}
	}
}

func TestScaleDown(t *testing.T) {
	tp := newTApp("web", 1)
	pods := runningPods(tp, 0, 1, 2)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, nil)

	got := f.sync("web")
	// Batches of 1 then 2: the highest id goes first (all pods are equal in ActivePods order).
	want := []string{"delete pods web-2", "delete pods web-1", "update tapps/status web"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("actions %q, want %q", got, want)
	}
	if ev := f.events(); !hasEvent(ev, "Normal SuccessfulDelete Deleted pod web-2") {
		t.Errorf("events %q", ev)
	}
	f.feedStatus()
	// Cache lag: the deleted pods are still there, but the sync waits for the deletions.
	sameActions(t, f.sync("web"))

	// The pods start terminating: both deletions are observed, nothing is deleted twice.
	for _, name := range []string{"web-1", "web-2"} {
		p := f.cachedPod(name)
		p.DeletionTimestamp = ptr.To(metav1.NewTime(epoch.Add(30 * time.Second)))
		bumpRV(p)
		f.setPod(p)
	}
	sameActions(t, f.sync("web"), "update tapps/status web")
	st := f.feedStatus().Status
	if st.Statuses["1"] != appsv1alpha1.InstanceKilling || st.Replicas != 1 {
		t.Errorf("status while terminating: %+v", st)
	}
	f.removePod("web-1")
	f.removePod("web-2")
	sameActions(t, f.sync("web"), "update tapps/status web")
	st = f.feedStatus().Status
	if len(st.Statuses) != 1 || st.Statuses["0"] != appsv1alpha1.InstanceRunningNow {
		t.Errorf("statuses after scale down: %v", st.Statuses)
	}
	sameActions(t, f.sync("web"))
}

func TestScaleDownUsesActivePodsOrder(t *testing.T) {
	tp := newTApp("web", 0)
	pods := runningPods(tp, 0, 1, 2, 3)
	setReady(pods[1], false) // not ready: the cheapest to lose
	pods[3].Spec.NodeName = ""
	pods[3].Status = corev1.PodStatus{Phase: corev1.PodPending} // unscheduled: cheaper still
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, nil)
	got := f.sync("web")
	if len(got) != 5 || got[0] != "delete pods web-3" {
		t.Fatalf("actions %q: the unscheduled pod must go first", got)
	}
	// Second batch (2 calls) is web-1 (not ready) and web-2 (highest id of the ready ones),
	// the third is web-0.
	sameActions(t, got[1:3], "delete pods web-1", "delete pods web-2")
	if got[3] != "delete pods web-0" {
		t.Fatalf("actions %q", got)
	}
}

func TestKillAndStart(t *testing.T) {
	tp := newTApp("web", 3)
	tp.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	pods := runningPods(tp, 0, 1, 2)
	var pvcs []*corev1.PersistentVolumeClaim
	for id := 0; id < 3; id++ {
		pvcs = append(pvcs, newPVC(tp, &tp.Spec.VolumeClaimTemplates[0], id))
	}
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, pvcs)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()

	// Kill instance 1.
	tp.Spec.Statuses = map[string]appsv1alpha1.InstanceDesiredStatus{"1": appsv1alpha1.InstanceKilled}
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, f.sync("web"), "delete pods web-1", "update tapps/status web")
	if ev := f.events(); !hasEvent(ev, "Normal Killed Killed instance 1") {
		t.Errorf("events %q", ev)
	}
	f.feedStatus()
	p := f.cachedPod("web-1")
	p.DeletionTimestamp = ptr.To(metav1.NewTime(epoch.Add(30 * time.Second)))
	bumpRV(p)
	f.setPod(p)
	sameActions(t, f.sync("web"), "update tapps/status web")
	if st := f.feedStatus().Status; st.Statuses["1"] != appsv1alpha1.InstanceKilling {
		t.Errorf("statuses[1] = %s, want Killing", st.Statuses["1"])
	}
	f.removePod("web-1")
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()
	if tp.Status.Statuses["1"] != appsv1alpha1.InstanceKilledNow || tp.Status.Replicas != 2 || tp.Status.AppStatus != appsv1alpha1.AppRunning {
		t.Errorf("status after kill: %+v", tp.Status)
	}
	// Killed stays killed: no pod is created for it.
	sameActions(t, f.sync("web"))

	// Start it again by removing the entry: same pod name, same claim (not created again).
	tp.Spec.Statuses = nil
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, f.sync("web"), "create pods web-1", "patch pods/status web-1", "update tapps/status web")
	p = createdPods(t, f)["web-1"]
	if p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-1" {
		t.Errorf("restarted instance uses volumes %+v", p.Spec.Volumes)
	}
}

func TestInPlaceUpdate(t *testing.T) {
	tp := newTApp("web", 3)
	pods := runningPods(tp, 0, 1, 2)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()
	oldInfo, _ := newTemplateSet(tp).forInstance(0)

	tp.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	tp.Spec.Template.Labels["release"] = "v2"
	tp.Generation++
	f.setTApp(tp)
	newInfo, _ := newTemplateSet(tp).forInstance(0)
	if newInfo.uniqHash != oldInfo.uniqHash || newInfo.hash == oldInfo.hash {
		t.Fatalf("an image and label change must keep the uniq hash and change the template hash")
	}

	// maxUnavailable 1: only web-0, first the gate goes False, then images and labels.
	got := f.sync("web")
	want := []string{"patch pods/status web-0", "patch pods web-0", revisionCreated(t, tp), "update tapps/status web"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("actions %q, want %q", got, want)
	}
	patches := f.findActions("patch", "pods")
	var spec struct {
		Metadata struct {
			UID    types.UID
			Labels map[string]*string
		}
		Spec struct{ Containers []map[string]string }
	}
	must(t, json.Unmarshal(patches[0].(core.PatchAction).GetPatch(), &spec))
	if patches[0].(core.PatchAction).GetPatchType() != types.StrategicMergePatchType ||
		spec.Metadata.UID != pods[0].UID ||
		len(spec.Spec.Containers) != 1 || spec.Spec.Containers[0]["name"] != "main" || spec.Spec.Containers[0]["image"] != "example.com/app:v2" ||
		ptr.Deref(spec.Metadata.Labels[appsv1alpha1.LabelTemplateHash], "") != newInfo.hash ||
		ptr.Deref(spec.Metadata.Labels["release"], "") != "v2" {
		t.Errorf("in-place patch %s", patches[0].(core.PatchAction).GetPatch())
	}
	var status struct {
		Status struct{ Conditions []corev1.PodCondition }
	}
	must(t, json.Unmarshal(f.findActions("patch", "pods/status")[0].(core.PatchAction).GetPatch(), &status))
	if c := status.Status.Conditions; len(c) != 1 || c[0].Status != corev1.ConditionFalse || c[0].Reason != reasonInPlaceUpdating || c[0].Message != inPlaceMessagePrefix+newInfo.hash {
		t.Errorf("gate patch %+v", c)
	}
	if ev := f.events(); !hasEvent(ev, "Normal InPlaceUpdate Updating pod web-0") {
		t.Errorf("events %q", ev)
	}
	f.feedStatus()

	// Cache lag: the pod still looks untouched; nothing is patched twice, nothing else starts.
	sameActions(t, f.sync("web"))

	// The status patch arrives first (gate False, Ready False), the spec patch not yet: the
	// containers still report the old spec's images, which must not count as done.
	p := f.cachedPod("web-0")
	p.Status.Conditions[0] = corev1.PodCondition{Type: appsv1alpha1.ConditionInPlaceUpdateReady, Status: corev1.ConditionFalse,
		Reason: reasonInPlaceUpdating, Message: inPlaceMessagePrefix + newInfo.hash}
	setReady(p, false)
	bumpRV(p)
	f.setPod(p)
	got = f.sync("web")
	for _, a := range got {
		if strings.Contains(a, "pods") {
			t.Fatalf("actions %q while the image patch is not visible", got)
		}
	}
	f.clearActions()

	// The image patch arrives; the kubelet has not restarted the container yet.
	p = f.cachedPod("web-0")
	p.Spec.Containers[0].Image = "example.com/app:v2"
	p.Labels[appsv1alpha1.LabelTemplateHash] = newInfo.hash
	p.Labels["release"] = "v2"
	bumpRV(p)
	f.setPod(p)
	got = f.sync("web")
	for _, a := range got {
		if strings.Contains(a, "pods") {
			t.Fatalf("actions %q while web-0 is updating: maxUnavailable is 1", got)
		}
	}
	if st := f.findActions("update", "tapps/status"); len(st) == 1 {
		s := st[0].(core.UpdateAction).GetObject().(*appsv1alpha1.TApp).Status
		if s.Statuses["0"] != appsv1alpha1.InstanceUpdating || s.UpdatedReplicas != 0 {
			t.Errorf("status while updating: statuses %v updated %d", s.Statuses, s.UpdatedReplicas)
		}
		f.feedStatus()
	}

	// The new container runs: the gate opens.
	p = f.cachedPod("web-0")
	p.Status.ContainerStatuses[0].Image = "example.com/app:v2"
	bumpRV(p)
	f.setPod(p)
	got = f.sync("web")
	if len(got) == 0 || got[0] != "patch pods/status web-0" || len(f.findActions("patch", "pods")) != 0 {
		t.Fatalf("actions %q, want the gate of web-0 set True and nothing else on pods", got)
	}
	if f.findActions("update", "tapps/status") != nil {
		f.feedStatus()
	}

	// web-0 is ready again with the same UID: web-1 is next.
	p = f.cachedPod("web-0")
	p.Status.Conditions[0] = corev1.PodCondition{Type: appsv1alpha1.ConditionInPlaceUpdateReady, Status: corev1.ConditionTrue, Reason: reasonImagesReady}
	setReady(p, true)
	bumpRV(p)
	f.setPod(p)
	if p.UID != pods[0].UID {
		t.Fatal("UID changed")
	}
	sameActions(t, f.sync("web"), "patch pods/status web-1", "patch pods web-1", "update tapps/status web")
	if f.findActions("delete", "pods") != nil {
		t.Fatal("in-place update deleted a pod")
	}
}

func TestRecreateUpdate(t *testing.T) {
	tp := newTApp("web", 2)
	pods := runningPods(tp, 0, 1)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()

	tp.Spec.Template.Spec.Containers[0].Command = []string{"serve", "--verbose"}
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, f.sync("web"), "delete pods web-0", revisionCreated(t, tp), "update tapps/status web")
	if ev := f.events(); !hasEvent(ev, "Normal Recreate Deleted pod web-0") {
		t.Errorf("events %q", ev)
	}
	f.feedStatus()
	sameActions(t, f.sync("web")) // lagging cache: waits

	p := f.cachedPod("web-0")
	p.DeletionTimestamp = ptr.To(metav1.NewTime(epoch.Add(30 * time.Second)))
	bumpRV(p)
	f.setPod(p)
	got := f.sync("web")
	for _, a := range got {
		if strings.Contains(a, "pods") {
			t.Fatalf("actions %q while web-0 terminates (maxUnavailable 1)", got)
		}
	}
	if f.findActions("update", "tapps/status") != nil {
		if s := f.feedStatus().Status; s.Statuses["0"] != appsv1alpha1.InstanceUpdating {
			t.Errorf("statuses %v, want 0 Updating", s.Statuses)
		}
	}

	f.removePod("web-0")
	sameActions(t, f.sync("web"), "create pods web-0", "patch pods/status web-0", "update tapps/status web")
	info, _ := newTemplateSet(tp).forInstance(0)
	np := createdPods(t, f)["web-0"]
	if np.Labels[appsv1alpha1.LabelTemplateHash] != info.hash || strings.Join(np.Spec.Containers[0].Command, " ") != "serve --verbose" {
		t.Errorf("re-created pod: labels %v command %v", np.Labels, np.Spec.Containers[0].Command)
	}
}

func TestNoOpResync(t *testing.T) {
	tp := newTApp("web", 3)
	tp.Spec.MinReadySeconds = 10
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1, 2), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	st := f.feedStatus().Status
	if st.Replicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.UpdatedReplicas != 3 || st.AppStatus != appsv1alpha1.AppRunning {
		t.Errorf("settled status %+v", st)
	}
	if c := meta.FindStatusCondition(st.Conditions, appsv1alpha1.ConditionProgressing); c == nil || c.Reason != appsv1alpha1.ReasonRolloutComplete || c.Status != metav1.ConditionTrue {
		t.Errorf("Progressing %+v", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, appsv1alpha1.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Available %+v", c)
	}
	if meta.FindStatusCondition(st.Conditions, appsv1alpha1.ConditionReplicaFailure) != nil {
		t.Errorf("ReplicaFailure present")
	}
	sameActions(t, f.sync("web"))
	f.clock.Step(time.Hour)
	sameActions(t, f.sync("web"))
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("events on resync: %q", ev)
	}
}

func TestSelectorMismatch(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	st := f.feedStatus().Status
	c := meta.FindStatusCondition(st.Conditions, appsv1alpha1.ConditionReplicaFailure)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != appsv1alpha1.ReasonSelectorMismatch {
		t.Errorf("ReplicaFailure %+v", c)
	}
	if ev := f.events(); len(ev) != 1 || !hasEvent(ev, "Warning SelectorMismatch") {
		t.Errorf("events %q", ev)
	}
	sameActions(t, f.sync("web"))
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("repeated events %q", ev)
	}
}

func TestPartitionAndPaused(t *testing.T) {
	tp := newTApp("web", 4)
	tp.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4))
	tp.Spec.UpdateStrategy.Partition = ptr.To[int32](2)
	tp.Spec.UpdateStrategy.Paused = true
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1, 2, 3), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()
	tp.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, f.sync("web"), revisionCreated(t, tp), "update tapps/status web")
	st := f.feedStatus().Status
	if c := meta.FindStatusCondition(st.Conditions, appsv1alpha1.ConditionProgressing); c == nil || c.Reason != appsv1alpha1.ReasonRolloutPaused {
		t.Errorf("Progressing %+v, want RolloutPaused", c)
	}
	tp = f.getTApp("web")
	tp.Spec.UpdateStrategy.Paused = false
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, f.sync("web"), "patch pods/status web-2", "patch pods web-2", "patch pods/status web-3", "patch pods web-3", "update tapps/status web")
}

func TestForceUpdateOfOtherTemplates(t *testing.T) {
	tp := newTApp("web", 4)
	canary := *tp.Spec.Template.DeepCopy()
	canary.Labels["track"] = "canary"
	tp.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"canary": canary, "stable": *tp.Spec.Template.DeepCopy()}
	tp.Spec.DefaultTemplateName = "stable"
	tp.Spec.Templates = map[string]string{"0": "canary", "1": "canary"}
	tp.Spec.UpdateStrategy.Template = "stable"
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1, 2, 3), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()

	// Both templates change: stable rolls one at a time (maxUnavailable 1), canary is forced (100%).
	for _, n := range []string{"stable", "canary"} {
		tpl := tp.Spec.TemplatePool[n]
		tpl.Spec.Containers[0].Image = "example.com/app:v2"
		tp.Spec.TemplatePool[n] = tpl
	}
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, f.sync("web"),
		"patch pods/status web-0", "patch pods web-0", "patch pods/status web-1", "patch pods web-1",
		"patch pods/status web-2", "patch pods web-2", revisionCreated(t, tp), "update tapps/status web")
}

func TestFinishedPods(t *testing.T) {
	cases := []struct {
		policy       corev1.RestartPolicy
		phase        corev1.PodPhase
		neverMigrate bool
		recreate     bool
		status       appsv1alpha1.InstanceStatus
	}{
		{corev1.RestartPolicyAlways, corev1.PodSucceeded, false, true, appsv1alpha1.InstancePodSucc},
		{corev1.RestartPolicyAlways, corev1.PodFailed, false, true, appsv1alpha1.InstancePodFailed},
		{corev1.RestartPolicyOnFailure, corev1.PodFailed, false, true, appsv1alpha1.InstancePodFailed},
		{corev1.RestartPolicyOnFailure, corev1.PodSucceeded, false, false, appsv1alpha1.InstancePodSucc},
		{corev1.RestartPolicyNever, corev1.PodFailed, false, false, appsv1alpha1.InstancePodFailed},
		{corev1.RestartPolicyNever, corev1.PodSucceeded, false, false, appsv1alpha1.InstancePodSucc},
		{corev1.RestartPolicyAlways, corev1.PodFailed, true, false, appsv1alpha1.InstancePodFailed},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy)+"/"+string(tc.phase), func(t *testing.T) {
			tp := newTApp("job", 1)
			tp.Spec.NeverMigrate = tc.neverMigrate
			tp.Spec.Template.Spec.RestartPolicy = tc.policy
			p := runningPod(tp, 0)
			p.Status.Phase = tc.phase
			setReady(p, false)
			f := newFixture(t, []*appsv1alpha1.TApp{tp}, []*corev1.Pod{p}, nil)
			want := []string{"update tapps/status job"}
			if tc.recreate {
				want = append(want, "delete pods job-0")
			}
			sameActions(t, f.sync("job"), want...)
			st := f.statusWritten().Status
			if st.Statuses["0"] != tc.status {
				t.Errorf("statuses[0] = %s, want %s", st.Statuses["0"], tc.status)
			}
			if !tc.recreate {
				wantApp := appsv1alpha1.AppSucc
				if tc.phase == corev1.PodFailed {
					wantApp = appsv1alpha1.AppFailed
				}
				if st.AppStatus != wantApp {
					t.Errorf("appStatus %s, want %s", st.AppStatus, wantApp)
				}
			}
		})
	}
}

func TestForceDeletePod(t *testing.T) {
	for _, nodeIsReady := range []bool{false, true} {
		tp := newTApp("web", 1)
		tp.Spec.ForceDeletePod = true
		p := runningPod(tp, 0)
		p.DeletionTimestamp = ptr.To(metav1.NewTime(epoch.Add(-time.Minute)))
		st := corev1.ConditionFalse
		if nodeIsReady {
			st = corev1.ConditionTrue
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
		f := newFixture(t, []*appsv1alpha1.TApp{tp}, []*corev1.Pod{p}, nil, node)
		got := f.sync("web")
		if nodeIsReady {
			sameActions(t, got, "get nodes node-1", "update tapps/status web")
			continue
		}
		sameActions(t, got, "get nodes node-1", "delete pods web-0", "update tapps/status web")
		del := f.findActions("delete", "pods")[0].(core.DeleteAction)
		if gp := del.GetDeleteOptions().GracePeriodSeconds; gp == nil || *gp != 0 {
			t.Errorf("force delete with grace period %v", gp)
		}
	}
}

func TestAutoDeleteUnusedTemplate(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.AutoDeleteUnusedTemplate = true
	tp.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"a": *tp.Spec.Template.DeepCopy(), "old": *tp.Spec.Template.DeepCopy()}
	old := tp.Spec.TemplatePool["old"]
	old.Spec.Containers[0].Image = "example.com/app:v0"
	tp.Spec.TemplatePool["old"] = old
	tp.Spec.Templates = map[string]string{"0": "a"}
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil)
	sameActions(t, f.sync("web"), "update tapps web")
	upd := f.findActions("update", "tapps")[0].(core.UpdateAction).GetObject().(*appsv1alpha1.TApp)
	if _, ok := upd.Spec.TemplatePool["old"]; ok || len(upd.Spec.TemplatePool) != 1 {
		t.Errorf("templatePool after prune: %v", upd.Spec.TemplatePool)
	}
}

func TestMinReadySeconds(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.MinReadySeconds = 30
	pods := runningPods(tp, 0, 1)
	for _, p := range pods {
		for i := range p.Status.Conditions {
			p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(epoch.Add(-10 * time.Second))
		}
	}
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	st := f.feedStatus().Status
	if st.ReadyReplicas != 2 || st.AvailableReplicas != 0 {
		t.Errorf("ready %d available %d, want 2 and 0", st.ReadyReplicas, st.AvailableReplicas)
	}
	p := computePlan(f.getTApp("web"), newTemplateSet(f.getTApp("web")), map[int]*corev1.Pod{0: pods[0], 1: pods[1]}, epoch, func(*corev1.Pod) bool { return false })
	if p.requeueAfter != 20*time.Second {
		t.Errorf("requeueAfter %v, want 20s", p.requeueAfter)
	}
	f.clock.Step(20 * time.Second)
	sameActions(t, f.sync("web"), "update tapps/status web")
	if st := f.feedStatus().Status; st.AvailableReplicas != 2 {
		t.Errorf("available %d after minReadySeconds", st.AvailableReplicas)
	}
}

func TestCreateFailureStopsSlowStart(t *testing.T) {
	tp := newTApp("web", 5)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil)
	f.fail = map[string]error{"create pods": apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("exceeded quota"))}
	err := f.c.syncHandler(context.Background(), cache.NewObjectName(ns, "web"))
	if err == nil {
		t.Fatal("sync succeeded with failing creates")
	}
	sameActions(t, f.actions(), "create pods web-0", "update tapps/status web")
	st := f.statusWritten().Status
	if c := meta.FindStatusCondition(st.Conditions, appsv1alpha1.ConditionReplicaFailure); c == nil || c.Reason != appsv1alpha1.ReasonFailedCreate {
		t.Errorf("ReplicaFailure %+v", c)
	}
	if !f.c.expectations.SatisfiedExpectations(ns + "/web") {
		t.Error("expectations not lowered for failed and skipped creations")
	}
	if ev := f.events(); !hasEvent(ev, "Warning FailedCreate") {
		t.Errorf("events %q", ev)
	}
}

// In a namespace being deleted every creation fails: the first failure stops the slow start, and
// it is neither an error to retry, nor an Event (which would be refused too), nor a ReplicaFailure.
func TestCreateInTerminatingNamespace(t *testing.T) {
	tp := newTApp("web", 5)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil)
	f.fail = map[string]error{"create pods": terminatingError(corev1.Resource("pods"), "web-0")}
	if err := f.c.syncHandler(context.Background(), cache.NewObjectName(ns, "web")); err != nil {
		t.Fatalf("sync failed: %v", err)
	}
	if creates := f.findActions("create", "pods"); len(creates) != 1 {
		t.Errorf("%d pod creates, want 1 (the slow start stops at the first refusal)", len(creates))
	}
	noReplicaFailureWritten(t, f)
	if !f.c.expectations.SatisfiedExpectations(ns + "/web") {
		t.Error("expectations not lowered for failed and skipped creations")
	}
	if ev := f.events(); hasEvent(ev, "Warning") {
		t.Errorf("events %q", ev)
	}
}

// terminatingError is the API server's refusal to create an object in a namespace being deleted.
func terminatingError(gr schema.GroupResource, name string) error {
	err := apierrors.NewForbidden(gr, name, errors.New("unable to create new content in namespace because it is being terminated"))
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace is being terminated", Field: "metadata.namespace"}}
	return err
}

// noReplicaFailureWritten fails the test if a status written carries a ReplicaFailure.
func noReplicaFailureWritten(t *testing.T, f *fixture) {
	t.Helper()
	for _, a := range f.findActions("update", "tapps/status") {
		if st := a.(core.UpdateAction).GetObject().(*appsv1alpha1.TApp).Status; meta.FindStatusCondition(st.Conditions, appsv1alpha1.ConditionReplicaFailure) != nil {
			t.Errorf("ReplicaFailure written: %+v", st.Conditions)
		}
	}
}

// A revision refused in a namespace being deleted is ignored as a pod is (bench/RESULTS.md: the
// agent logged thousands of errors while BenchmarkReaction's namespace went).
func TestRevisionInTerminatingNamespace(t *testing.T) {
	tp := newTApp("web", 1)
	f := newFixtureWithHistory(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)
	f.fail = map[string]error{"create controllerrevisions": terminatingError(appsv1.Resource("controllerrevisions"), "web-1")}
	if err := f.c.syncHandler(context.Background(), cache.NewObjectName(ns, "web")); err != nil {
		t.Fatalf("sync failed: %v", err)
	}
	if creates := f.findActions("create", "controllerrevisions"); len(creates) != 1 {
		t.Errorf("%d revision creates, want 1", len(creates))
	}
	noReplicaFailureWritten(t, f)
}

func TestPodEventsResolveOwner(t *testing.T) {
	tp := newTApp("web", 1)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil)
	key := ns + "/web"
	f.c.expectations.ExpectCreations(key, 1)
	stranger := runningPod(tp, 0)
	stranger.OwnerReferences[0].UID = "someone-else"
	f.c.podEvents.OnAdd(stranger, false)
	if f.c.expectations.SatisfiedExpectations(key) {
		t.Fatal("a pod of another owner was counted")
	}
	f.c.podEvents.OnAdd(runningPod(tp, 0), false)
	if !f.c.expectations.SatisfiedExpectations(key) {
		t.Fatal("creation not observed")
	}
	p := runningPod(tp, 0)
	f.c.expectations.ExpectDeletions(key, []string{ns + "/web-0"})
	f.c.podEvents.OnDelete(cache.DeletedFinalStateUnknown{Key: ns + "/web-0", Obj: p})
	if !f.c.expectations.SatisfiedExpectations(key) {
		t.Fatal("deletion through a tombstone not observed")
	}
	// Pod events go to the status queue, which hands the key on when there is more to do.
	if f.c.status.Queue.Len() != 1 || f.c.Queue.Len() != 0 {
		t.Errorf("status queue length %d, main queue length %d, want the owner once in the status queue", f.c.status.Queue.Len(), f.c.Queue.Len())
	}
}

func TestStatusNotRewrittenWhileCacheLags(t *testing.T) {
	tp := newTApp("web", 2)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	written := f.statusWritten()
	// The cache still holds the TApp without that status: the same status is not written again.
	sameActions(t, f.sync("web"))
	// A real change is written on top of the controller's own last write, not the stale version.
	p := f.cachedPod("web-1")
	setReady(p, false)
	bumpRV(p)
	f.setPod(p)
	sameActions(t, f.sync("web"), "update tapps/status web")
	if got := f.statusWritten(); got.ResourceVersion != written.ResourceVersion || got.Status.ReadyReplicas != 1 {
		t.Errorf("second write based on version %q (want %q), readyReplicas %d", got.ResourceVersion, written.ResourceVersion, got.Status.ReadyReplicas)
	}
}

func TestCreateOfPodTheCacheMisses(t *testing.T) {
	tp := newTApp("web", 1)
	ours := runningPod(tp, 0)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil, ours)
	sameActions(t, f.sync("web"), "create pods web-0", "get pods web-0", "update tapps/status web")
	if ev := f.events(); hasEvent(ev, "Warning") {
		t.Errorf("events %q", ev)
	}
	if !f.c.expectations.SatisfiedExpectations(ns + "/web") {
		t.Error("expectation for an existing pod not lowered")
	}

	// A pod of that name that is not ours is an error.
	tp2 := newTApp("api", 1)
	foreign := runningPod(tp2, 0)
	foreign.OwnerReferences = nil
	f = newFixture(t, []*appsv1alpha1.TApp{tp2}, nil, nil, foreign)
	if err := f.c.syncHandler(context.Background(), cache.NewObjectName(ns, "api")); err == nil {
		t.Fatal("sync succeeded although a foreign pod holds the name")
	}
	if ev := f.events(); !hasEvent(ev, "Warning FailedCreate") {
		t.Errorf("events %q", ev)
	}
}

func TestDefaultTemplateRollsWithoutUpdateTemplate(t *testing.T) {
	tp := newTApp("web", 3)
	tp.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"stable": *tp.Spec.Template.DeepCopy()}
	tp.Spec.DefaultTemplateName = "stable"
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1, 2), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()
	tpl := tp.Spec.TemplatePool["stable"]
	tpl.Spec.Containers[0].Image = "example.com/app:v2"
	tp.Spec.TemplatePool["stable"] = tpl
	tp.Generation++
	f.setTApp(tp)
	// No updateStrategy.template: the default template rolls one at a time, not forced.
	sameActions(t, f.sync("web"), "patch pods/status web-0", "patch pods web-0", revisionCreated(t, tp), "update tapps/status web")
}

// duringCall runs fn once, when the sync under test calls "verb resource[/subresource] name":
// for events the informer delivers while a sync runs.
func (f *fixture) duringCall(call string, fn func()) {
	var once sync.Once
	f.kubeClient.PrependReactor("*", "*", func(a core.Action) (bool, runtime.Object, error) {
		if describe(a) == call {
			once.Do(fn)
		}
		return false, nil, nil
	})
}

// setGateFalse makes the in-place readiness gate of a cached pod False (its containers still run
// the images of its spec), so that the next sync opens it with a status patch.
func setGateFalse(f *fixture, name string) {
	p := f.cachedPod(name)
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == appsv1alpha1.ConditionInPlaceUpdateReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	bumpRV(p)
	f.setPod(p)
}

// TestExpectationsSatisfiedDuringSync: the expectations are not satisfied when a sync starts and
// become satisfied while it runs (the informer delivers the awaited event during the sync's
// readiness gate patch). The sync's pod list predates that event, so it must neither delete nor
// create; the next sync, with the cache caught up, does. Deciding after the other API calls
// deleted a pod twice (recreate update) or created it twice.
func TestExpectationsSatisfiedDuringSync(t *testing.T) {
	t.Run("deletion", func(t *testing.T) {
		// web-2 runs a template of the pool, which the update leaves alone: its gate is opened
		// without taking from the rolling update's budget.
		tp := newTApp("web", 3)
		tp.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"pinned": *tp.Spec.Template.DeepCopy()}
		tp.Spec.Templates = map[string]string{"2": "pinned"}
		f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1, 2), nil)
		sameActions(t, f.sync("web"), "update tapps/status web")
		tp = f.feedStatus()
		tp.Spec.Template.Spec.Containers[0].Command = []string{"serve", "--verbose"}
		tp.Generation++
		f.setTApp(tp)
		sameActions(t, f.sync("web"), "delete pods web-0", revisionCreated(t, tp), "update tapps/status web")
		f.feedStatus()

		// The cache still shows web-0 running; web-2's gate is to be opened. The deletion of web-0
		// is observed while the sync patches web-2's status.
		setGateFalse(f, "web-2")
		f.duringCall("patch pods/status web-2", func() {
			p := f.cachedPod("web-0")
			p.DeletionTimestamp = ptr.To(metav1.NewTime(epoch.Add(30 * time.Second)))
			bumpRV(p)
			f.setPod(p)
		})
		got := f.sync("web")
		for _, a := range got {
			if strings.HasPrefix(a, "delete pods") || strings.HasPrefix(a, "create pods") {
				t.Fatalf("actions %q: the sync acted on a pod list older than the observation that satisfied the expectations", got)
			}
		}
		sameActions(t, got, "patch pods/status web-2", "update tapps/status web")
		f.feedStatus()

		// The next sync sees web-0 terminating: nothing to do until it is gone.
		sameActions(t, f.sync("web"), "update tapps/status web")
		f.feedStatus()
		f.removePod("web-0")
		sameActions(t, f.sync("web"), "create pods web-0", "patch pods/status web-0", "update tapps/status web")
	})

	t.Run("creation", func(t *testing.T) {
		tp := newTApp("web", 2)
		f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)
		sameActions(t, f.sync("web"), "create pods web-1", "patch pods/status web-1", "update tapps/status web")
		f.feedStatus()
		created := createdPods(t, f)

		// The cache does not show web-1 yet; web-0's gate is to be opened. The creation of web-1 is
		// observed while the sync patches web-0's status.
		setGateFalse(f, "web-0")
		f.duringCall("patch pods/status web-0", func() { observeCreated(t, f, created) })
		got := f.sync("web")
		for _, a := range got {
			if strings.HasPrefix(a, "delete pods") || strings.HasPrefix(a, "create pods") || strings.HasPrefix(a, "get pods") {
				t.Fatalf("actions %q: the sync acted on a pod list older than the observation that satisfied the expectations", got)
			}
		}
		sameActions(t, got, "patch pods/status web-0", "update tapps/status web")
		f.feedStatus()

		// The next sync sees web-1: nothing to create.
		got = f.sync("web")
		for _, a := range got {
			if strings.Contains(a, " pods ") && !strings.HasPrefix(a, "patch pods/status") {
				t.Fatalf("actions %q after web-1 was observed", got)
			}
		}
	})
}
