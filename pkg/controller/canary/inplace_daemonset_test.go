package canary

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
)

// The DaemonSet agents schedules 4 pods (one per node); its revisions are agents-h1 (1) and
// agents-h2 (2).

func dsCanary() *v1alpha1.Canary {
	cn := targetCanary()
	cn.Name, cn.Spec.TargetRef = "agents", &v1alpha1.CanaryTargetRef{Kind: kindDaemonSet, Name: "agents"}
	return cn
}

// agentsDS is the DaemonSet with the template of hash update, held at partition (nil: not held,
// its updateStrategy RollingUpdate with maxUnavailable 1), and the status its pods give.
func agentsDS(update string, partition *int32, pods []*corev1.Pod) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents", Generation: 2, UID: "ds-uid", Annotations: map[string]string{}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agents"}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 4, CurrentNumberScheduled: 4},
	}
	if partition != nil {
		ds.Annotations[v1alpha1.AnnotationDaemonSetPartition] = fmt.Sprint(*partition)
		ds.Annotations[v1alpha1.AnnotationDaemonSetUpdateStrategy] = `{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}}`
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}
	for _, p := range pods {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind(kindDaemonSet))}
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == update {
			ds.Status.UpdatedNumberScheduled++
		}
		if dsAvailable(p) {
			ds.Status.NumberAvailable++
			ds.Status.NumberReady++
		}
	}
	return ds
}

func dsAvailable(p *corev1.Pod) bool {
	return len(p.Status.Conditions) > 0 && p.Status.Conditions[0].Status == corev1.ConditionTrue
}

// dsPods are the DaemonSet's pods, one per spec: a hash, with "!" for a pod not ready.
func dsPods(specs ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for i, s := range specs {
		hash, ready := strings.TrimSuffix(s, "!"), corev1.ConditionTrue
		if strings.HasSuffix(s, "!") {
			ready = corev1.ConditionFalse
		}
		out = append(out, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("agents-%d", i), UID: types.UID(fmt.Sprintf("pod-%d", i)),
				Labels: map[string]string{"app": "agents", appsv1.ControllerRevisionHashLabelKey: hash}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(start.Add(-time.Hour))}}},
		})
	}
	return out
}

// agents is the DaemonSet as a sync reads it: update revision h2 unless given.
func agents(update string, partition *int32, specs ...string) *daemonSetTarget {
	pods := dsPods(specs...)
	t := &daemonSetTarget{DaemonSet: agentsDS(update, partition, pods), update: update, now: start,
		revisions: map[string]daemonSetRevision{"h1": {"agents-h1", 1}, "h2": {"agents-h2", 2}, "h3": {"agents-h3", 3}}}
	if t.Status.UpdatedNumberScheduled < t.Status.DesiredNumberScheduled {
		t.pods = pods
	}
	return t
}

func syncDS(cn *v1alpha1.Canary, t *daemonSetTarget) *plan {
	r := computePlan(&observed{canary: cn, target: t}, metav1.NewTime(start))
	cn.Status = computeStatus(r, nil)
	return r
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

// agentsTemplate is the DaemonSet's pod template of a revision, its image agent:<hash>.
func agentsTemplate(hash string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agents"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:" + hash}}}}
}

// agentsRevision is the ControllerRevision the DaemonSet controller makes of a template: its
// data replaces spec.template.
func agentsRevision(ds *appsv1.DaemonSet, hash string, revision int64) *appsv1.ControllerRevision {
	tmpl, _ := json.Marshal(agentsTemplate(hash))
	var m map[string]any
	_ = json.Unmarshal(tmpl, &m)
	m["$patch"] = "replace"
	data, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": m}})
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents-" + hash,
		Labels:          map[string]string{"app": "agents", appsv1.ControllerRevisionHashLabelKey: hash},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind(kindDaemonSet))}},
		Data: runtime.RawExtension{Raw: data}, Revision: revision}
}

// readDaemonSet finds the update revision (the ControllerRevision of the DaemonSet's template)
// and the current one (the oldest a pod runs), and lists its pods only while some are not
// updated.
func TestReadDaemonSetRevisions(t *testing.T) {
	pods := dsPods("h1", "h1", "h2", "h1")
	ds := agentsDS("h2", ptr.To[int32](3), pods)
	ds.Spec.Template = agentsTemplate("h2")
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other", Labels: map[string]string{"app": "agents", appsv1.ControllerRevisionHashLabelKey: "hx"}}}
	objs := []runtime.Object{agentsRevision(ds, "h1", 1), agentsRevision(ds, "h2", 2)}
	for _, p := range append(pods, other) {
		objs = append(objs, p)
	}
	kube := k8sfake.NewClientset(objs...)
	got, err := readDaemonSet(context.Background(), kube, ds, start)
	if err != nil {
		t.Fatal(err)
	}
	ts := got.state()
	if !ts.observed || ts.updateRevision != "agents-h2" || ts.currentRevision != "agents-h1" || ts.held != 3 || ts.replicas != 4 || ts.updated != 1 {
		t.Errorf("state %+v", ts)
	}
	if len(got.pods) != 4 {
		t.Errorf("pods %s, want the DaemonSet's 4 (not the unowned one)", names(got.pods))
	}
	// Every pod on the update revision: no pod is listed.
	kube.ClearActions()
	ds = agentsDS("h2", ptr.To[int32](4), dsPods("h2", "h2", "h2", "h2"))
	ds.Spec.Template = agentsTemplate("h2")
	if got, err = readDaemonSet(context.Background(), kube, ds, start); err != nil || got.pods != nil || got.state().currentRevision != "agents-h2" {
		t.Fatalf("settled: %v pods %v state %+v", err, got.pods, got.state())
	}
	for _, a := range kube.Actions() {
		if a.GetResource().Resource == "pods" {
			t.Errorf("settled DaemonSet: %s %s, want no pod read", a.GetVerb(), a.GetResource().Resource)
		}
	}
	// The watch lags: the DaemonSet as read has template h1, and h2 is listed already. Its
	// update revision is h1 (and the pods of h2 are not deleted for it).
	ds = agentsDS("h1", ptr.To[int32](4), pods)
	ds.Spec.Template = agentsTemplate("h1")
	if got, err = readDaemonSet(context.Background(), kube, ds, start); err != nil || got.state().updateRevision != "agents-h1" {
		t.Fatalf("lagging watch: %v state %+v", err, got.state())
	}
	if d := got.deletions(0); len(d) != 0 {
		t.Errorf("lagging watch: deletions %s, want none", names(d))
	}
}

// A release of a DaemonSet: held (OnDelete) between releases; each step lowers the partition
// and deletes old pods, at most maxUnavailable (1) unavailable at once.
func TestDaemonSetTargetReleaseThroughTheSteps(t *testing.T) {
	cn := dsCanary()
	// Not held yet (RollingUpdate): the hold at 4.
	r := syncDS(cn, agents("h1", nil, "h1", "h1", "h1", "h1"))
	if w := inPlace(r).writes; len(w) != 1 || w[0].kind != setPartition || w[0].partition != 4 {
		t.Fatalf("writes %+v, want the hold at 4", w)
	}
	if r.reason != v1alpha1.ReasonHolding {
		t.Errorf("reason %s: %s", r.reason, r.message)
	}
	// The template changed: step 1 keeps 3 pods on h1, and one is deleted.
	held := agents("h2", ptr.To[int32](4), "h1", "h1", "h1", "h1")
	r = syncDS(cn, held)
	if w := inPlace(r).writes; len(w) != 1 || w[0].partition != 3 {
		t.Fatalf("step 1 writes %+v", w)
	}
	if cn.Status.Target.StableRevision != "agents-h1" || cn.Status.Target.UpdateRevision != "agents-h2" {
		t.Errorf("target %+v", cn.Status.Target)
	}
	if d := held.deletions(3); names(d) != "agents-0" {
		t.Errorf("step 1 deletes %s, want agents-0", names(d))
	}
	// Deleted, not recreated yet: the step waits, nothing more is deleted (1 unavailable).
	gone := agents("h2", ptr.To[int32](3), "h1", "h1", "h1")
	gone.Status.DesiredNumberScheduled = 4
	if r = syncDS(cn, gone); len(inPlace(r).writes) != 0 || names(gone.deletions(3)) != "" {
		t.Fatalf("step 1 under way: writes %+v deletions %s", inPlace(r).writes, names(gone.deletions(3)))
	}
	// Recreated on h2 and ready: step 1 bakes.
	if r = syncDS(cn, agents("h2", ptr.To[int32](3), "h2", "h1", "h1", "h1")); cn.Status.Batches[0].State != v1alpha1.BatchBaking {
		t.Fatalf("step 1 done: state %s writes %+v", cn.Status.Batches[0].State, inPlace(r).writes)
	}
	cn.Spec.ApprovedBatch = 1
	step2 := agents("h2", ptr.To[int32](3), "h2", "h1", "h1", "h1")
	if r = syncDS(cn, step2); len(inPlace(r).writes) != 1 || inPlace(r).writes[0].partition != 2 || names(step2.deletions(2)) != "agents-1" {
		t.Fatalf("step 2 writes %+v deletions %s", inPlace(r).writes, names(step2.deletions(2)))
	}
	// The last step: keep 0, but one pod at a time.
	step3 := agents("h2", ptr.To[int32](2), "h2", "h2", "h1", "h1")
	if r = syncDS(cn, step3); len(inPlace(r).writes) != 1 || inPlace(r).writes[0].partition != 0 || names(step3.deletions(0)) != "agents-2" {
		t.Fatalf("step 3 writes %+v deletions %s", inPlace(r).writes, names(step3.deletions(0)))
	}
	r = syncDS(cn, agents("h2", ptr.To[int32](0), "h2", "h2", "h2", "h2"))
	if cn.Status.Phase != v1alpha1.CanaryCompleted || r.reason != v1alpha1.ReasonCompleted || cn.Status.Target.StableRevision != "agents-h2" {
		t.Fatalf("phase %s reason %s target %+v: %s", cn.Status.Phase, r.reason, cn.Status.Target, r.message)
	}
	if w := inPlace(r).writes; len(w) != 1 || w[0].partition != 4 {
		t.Errorf("after completion writes %+v, want the hold at 4", w)
	}

	// The next template: its ControllerRevision h3 is listed before the DaemonSet controller
	// observed the change (its status still counts every pod updated). The release of h3 then
	// starts from step 1, not at the last step of the release before.
	lagging := agents("h3", ptr.To[int32](4), "h2", "h2", "h2", "h2")
	lagging.Generation, lagging.Status.UpdatedNumberScheduled = 3, 4
	syncDS(cn, lagging)
	r = syncDS(cn, agents("h3", ptr.To[int32](4), "h2", "h2", "h2", "h2"))
	if w := inPlace(r).writes; cn.Status.CurrentBatch != 1 || len(w) != 1 || w[0].partition != 3 {
		t.Errorf("release of h3: step %d writes %+v, want step 1 keeping 3", cn.Status.CurrentBatch, w)
	}
}

// Unavailable old pods go first and cost no availability; pods of a revision between the stable
// and the update one go before the stable ones; a percentage maxUnavailable is rounded up.
func TestDaemonSetDeletionsWithinMaxUnavailable(t *testing.T) {
	for name, tc := range map[string]struct {
		target *daemonSetTarget
		keep   int32
		want   string
	}{
		"one at a time":              {agents("h2", ptr.To[int32](0), "h1", "h1", "h1", "h1"), 0, "agents-0"},
		"unavailable first and free": {agents("h2", ptr.To[int32](0), "h1", "h1!", "h1", "h1"), 0, "agents-1"},
		"in between first":           {agents("h3", ptr.To[int32](2), "h1", "h1", "h2", "h1"), 2, "agents-2"},
		"nothing above the keep":     {agents("h2", ptr.To[int32](2), "h2", "h2", "h1", "h1"), 2, ""},
		"unavailable new pod":        {agents("h2", ptr.To[int32](0), "h2!", "h1", "h1", "h1"), 0, ""},
		"50% of 4":                   {withMaxUnavailable(agents("h2", ptr.To[int32](0), "h1", "h1", "h1", "h1"), "50%"), 0, "agents-0,agents-1"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := names(tc.target.deletions(tc.keep)); got != tc.want {
				t.Errorf("deletions %q, want %q", got, tc.want)
			}
		})
	}
}

func withMaxUnavailable(t *daemonSetTarget, mu string) *daemonSetTarget {
	t.Annotations[v1alpha1.AnnotationDaemonSetUpdateStrategy] = fmt.Sprintf(`{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":%q}}`, mu)
	return t
}

// An abort writes the stable template back; then every pod of the aborted revision is deleted
// (the partition does not keep them), within maxUnavailable, and the DaemonSet is held again.
func TestDaemonSetTargetAbort(t *testing.T) {
	cn := dsCanary()
	syncDS(cn, agents("h1", ptr.To[int32](4), "h1", "h1", "h1", "h1"))
	syncDS(cn, agents("h2", ptr.To[int32](4), "h1", "h1", "h1", "h1"))
	cn.Spec.Rollback = true
	r := syncDS(cn, agents("h2", ptr.To[int32](3), "h2", "h1", "h1", "h1"))
	if w := inPlace(r).writes; len(w) != 1 || w[0].kind != restoreTemplate || w[0].revision != "agents-h1" {
		t.Fatalf("abort writes %+v", w)
	}
	// The template written back, the DaemonSet controller has not observed it yet: the stable
	// revision stays (the pods could not tell it: h2's look older than h1's, renumbered next).
	lagging := agents("h2", ptr.To[int32](3), "h2", "h1", "h1", "h1")
	lagging.Generation = 3
	if r = syncDS(cn, lagging); len(inPlace(r).writes) != 0 || cn.Status.Target.StableRevision != "agents-h1" {
		t.Fatalf("not observed: writes %+v target %+v", inPlace(r).writes, cn.Status.Target)
	}
	// h1 is the update revision again (renumbered 4 by the DaemonSet controller).
	back := agents("h1", ptr.To[int32](3), "h2", "h1", "h1", "h1")
	back.revisions["h1"] = daemonSetRevision{"agents-h1", 4}
	r = syncDS(cn, back)
	if len(inPlace(r).writes) != 0 || cn.Status.Phase != v1alpha1.CanaryRollingBack || inPlace(r).stableRev != "agents-h1" {
		t.Fatalf("rolling back: writes %+v phase %s stable %s", inPlace(r).writes, cn.Status.Phase, inPlace(r).stableRev)
	}
	kube := k8sfake.NewClientset(podObjects(back.pods)...)
	c := &Controller{kubeClient: kube}
	c.Base = base.New(ControllerName, Kind, record.NewFakeRecorder(10))
	rec := record.NewFakeRecorder(10)
	c.Base = base.New(ControllerName, Kind, rec)
	if f, err := r.rel.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	if got := actions(kube); got != "delete pods agents-0" {
		t.Errorf("actions %q, want the pod of the aborted revision deleted", got)
	}
	if len(rec.Events) != 0 {
		t.Errorf("an Event %q for a deletion without a write: deletions are logged only", <-rec.Events)
	}
	r = syncDS(cn, agents("h1", ptr.To[int32](3), "h1", "h1", "h1", "h1"))
	if cn.Status.Phase != v1alpha1.CanaryRolledBack || len(inPlace(r).writes) != 1 || inPlace(r).writes[0].partition != 4 {
		t.Fatalf("rolled back: phase %s writes %+v", cn.Status.Phase, inPlace(r).writes)
	}
}

func podObjects(pods []*corev1.Pod) []runtime.Object {
	var out []runtime.Object
	for _, p := range pods {
		out = append(out, p)
	}
	return out
}

func actions(kube *k8sfake.Clientset) string {
	var got []string
	for _, a := range kube.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		switch a := a.(type) {
		case k8stesting.PatchAction:
			s += " " + string(a.GetPatch())
		case k8stesting.DeleteAction:
			s += " " + a.GetName()
		case k8stesting.GetAction:
			s += " " + a.GetName()
		}
		got = append(got, s)
	}
	return strings.Join(got, "\n")
}

// The first hold patches the DaemonSet once: updateStrategy OnDelete, the partition and the
// strategy it had; the same sync then deletes step 1's pod. releaseHold writes the strategy back.
func TestDaemonSetHoldAndReleaseActions(t *testing.T) {
	target := agents("h2", nil, "h1", "h1", "h1", "h1")
	kube := k8sfake.NewClientset(append(podObjects(target.pods), target.DaemonSet)...)
	c := &Controller{kubeClient: kube}
	rec := record.NewFakeRecorder(10)
	c.Base = base.New(ControllerName, Kind, rec)
	cn := dsCanary()
	r := &inPlacePlan{decision: &decision{obs: &observed{target: target, canary: cn}, canary: cn}, target: target, stableRev: "agents-h1",
		writes: []targetWrite{{kind: setPartition, partition: 3, step: 1}}}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	// One Event says both.
	if e := <-rec.Events; !strings.Contains(e, "OnDelete") || !strings.Contains(e, "deleted pods agents-0") || len(rec.Events) != 0 {
		t.Errorf("event %q (and %d more), want one naming the hold and the deleted pod", e, len(rec.Events))
	}
	want := `patch daemonsets {"metadata":{"annotations":{"apps.workload.dev/daemonset-partition":"3","apps.workload.dev/daemonset-update-strategy":"{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxUnavailable\":1}}"}},"spec":{"updateStrategy":{"rollingUpdate":null,"type":"OnDelete"}}}` +
		"\ndelete pods agents-0"
	if got := actions(kube); got != want {
		t.Errorf("actions:\n%s\nwant:\n%s", got, want)
	}

	// The Canary deleted between releases: the strategy it had is written back.
	kube.ClearActions()
	settled := agents("h2", ptr.To[int32](4), "h2", "h2", "h2", "h2").DaemonSet
	kube = k8sfake.NewClientset(settled)
	c.kubeClient = kube
	if err := c.releaseTargetHold(context.Background(), daemonSetKind{}, cn); err != nil {
		t.Fatal(err)
	}
	want = `get daemonsets agents` + "\n" +
		`patch daemonsets {"metadata":{"annotations":{"apps.workload.dev/daemonset-partition":null,"apps.workload.dev/daemonset-update-strategy":null}},"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}}}}`
	if got := actions(kube); got != want {
		t.Errorf("releaseHold actions:\n%s\nwant:\n%s", got, want)
	}
	// Mid-release it leaves the DaemonSet held.
	kube = k8sfake.NewClientset(agents("h2", ptr.To[int32](3), "h2", "h1", "h1", "h1").DaemonSet)
	c.kubeClient = kube
	if err := c.releaseTargetHold(context.Background(), daemonSetKind{}, cn); err != nil {
		t.Fatal(err)
	}
	if got := actions(kube); got != "get daemonsets agents" {
		t.Errorf("releaseHold mid-release: %s, want nothing written", got)
	}
}

// An abort writes the stable ControllerRevision's data to the DaemonSet, as it is.
func TestDaemonSetRestoreRevisionActions(t *testing.T) {
	target := agents("h2", ptr.To[int32](3), "h2", "h1", "h1", "h1")
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agents-h1",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(target.DaemonSet, appsv1.SchemeGroupVersion.WithKind(kindDaemonSet))}},
		Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"agent","image":"agent:v1"}]}}}}`)},
	}
	kube := k8sfake.NewClientset(target.DaemonSet, rev)
	c := &Controller{kubeClient: kube}
	c.Base = base.New(ControllerName, Kind, record.NewFakeRecorder(10))
	cn := dsCanary()
	r := &inPlacePlan{decision: &decision{obs: &observed{target: target, canary: cn}, canary: cn}, target: target, stableRev: "agents-h1",
		writes: []targetWrite{{kind: restoreTemplate, revision: "agents-h1", reason: "AnalysisFailed"}}}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	// No pod is deleted in the sync that wrote the template.
	if got, want := actions(kube), "get controllerrevisions agents-h1\npatch daemonsets "+string(rev.Data.Raw); got != want {
		t.Errorf("actions:\n%s\nwant:\n%s", got, want)
	}
}

// spec.replicas must be the number of pods the DaemonSet schedules.
func TestDaemonSetTargetReplicasRefused(t *testing.T) {
	cn := dsCanary()
	cn.Spec.Replicas = 6
	r := syncDS(cn, agents("h1", nil, "h1", "h1", "h1", "h1"))
	if !r.degraded || r.reason != v1alpha1.ReasonInvalidSpec || len(inPlace(r).writes) != 0 || !strings.Contains(r.message, "DaemonSet \"agents\" has 4") {
		t.Errorf("degraded %v reason %s writes %+v: %s", r.degraded, r.reason, inPlace(r).writes, r.message)
	}
}
