package canary

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
	appslisters "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

// tappCanary releases TApp games of 4 instances: 1 with a 1m pause, 2, then all.
func tappCanary() *v1alpha1.Canary {
	cn := targetCanary()
	cn.Name = "games"
	cn.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "TApp", Name: "games"}
	return cn
}

// games is the TApp at partition p, with updated instances on update and the rest on current,
// every instance ready and available.
func games(p, updated int32, current, update string) *v1alpha1.TApp {
	return &v1alpha1.TApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "games", Generation: 2, UID: "tapp-uid"},
		Spec: v1alpha1.TAppSpec{
			Replicas:       ptr.To[int32](4),
			Template:       corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "game", Image: "game:" + update}}}},
			UpdateStrategy: v1alpha1.TAppUpdateStrategy{Partition: ptr.To(p)},
		},
		Status: v1alpha1.TAppStatus{
			ObservedGeneration: 2, Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4, UpdatedReplicas: updated,
			CurrentRevision: current, UpdateRevision: update,
		},
	}
}

func syncTApp(t *testing.T, cn *v1alpha1.Canary, tapp *v1alpha1.TApp) *plan {
	t.Helper()
	r := computePlan(&observed{canary: cn, target: tappTarget{tapp}}, metav1.NewTime(start))
	cn.Status = computeStatus(r, nil)
	return r
}

// wantPartition fails unless the plan's only write sets the partition to p.
func wantPartition(t *testing.T, what string, r *plan, p int32) {
	t.Helper()
	if w := inPlace(r).writes; len(w) != 1 || w[0].kind != setPartition || w[0].partition != p {
		t.Fatalf("%s: writes %+v, want the partition set to %d (%s: %s)", what, w, p, r.reason, r.message)
	}
}

// A TApp is held, released through the 3 steps by its partition, completed and held again; the
// next release, aborted, writes the stable revision's templates back and rolls back.
func TestTAppTargetReleaseAndAbort(t *testing.T) {
	cn := tappCanary()
	r := syncTApp(t, cn, games(0, 4, "v1", "v1"))
	wantPartition(t, "idle", r, 4)
	if cn.Status.Phase != v1alpha1.CanaryCompleted || r.reason != v1alpha1.ReasonHolding {
		t.Fatalf("idle: phase %s reason %s", cn.Status.Phase, r.reason)
	}

	// The template changed under the hold: the TApp controller keeps v1 current.
	wantPartition(t, "step 1", syncTApp(t, cn, games(4, 0, "v1", "v2")), 3)
	if cn.Status.CurrentBatch != 1 || cn.Status.Target.StableRevision != "v1" || cn.Status.Target.UpdateRevision != "v2" {
		t.Fatalf("step 1: batch %d target %+v", cn.Status.CurrentBatch, cn.Status.Target)
	}
	r = syncTApp(t, cn, games(3, 1, "v1", "v2"))
	if len(inPlace(r).writes) != 0 || cn.Status.Batches[0].State != v1alpha1.BatchBaking || r.requeueAfter != time.Minute {
		t.Fatalf("step 1 done: writes %+v state %s requeue %s", inPlace(r).writes, cn.Status.Batches[0].State, r.requeueAfter)
	}
	cn.Spec.ApprovedBatch = 1
	wantPartition(t, "step 2", syncTApp(t, cn, games(3, 1, "v1", "v2")), 2)
	wantPartition(t, "step 3", syncTApp(t, cn, games(2, 2, "v1", "v2")), 0)
	r = syncTApp(t, cn, games(0, 4, "v2", "v2"))
	wantPartition(t, "completed", r, 4)
	if cn.Status.Phase != v1alpha1.CanaryCompleted || r.reason != v1alpha1.ReasonCompleted || cn.Status.Target.StableRevision != "v2" {
		t.Fatalf("completed: phase %s reason %s target %+v", cn.Status.Phase, r.reason, cn.Status.Target)
	}

	// The next release, aborted at step 1: v2's templates written back, the partition kept.
	syncTApp(t, cn, games(4, 0, "v2", "v3"))
	cn.Spec.Rollback = true
	r = syncTApp(t, cn, games(3, 1, "v2", "v3"))
	if w := inPlace(r).writes; len(w) != 1 || w[0].kind != restoreTemplate || w[0].revision != "v2" {
		t.Fatalf("abort: writes %+v, want v2 written back", w)
	}
	if r = syncTApp(t, cn, games(3, 3, "v2", "v2")); len(inPlace(r).writes) != 0 || cn.Status.Phase != v1alpha1.CanaryRollingBack {
		t.Fatalf("rolling back: writes %+v phase %s", inPlace(r).writes, cn.Status.Phase)
	}
	r = syncTApp(t, cn, games(3, 4, "v2", "v2"))
	wantPartition(t, "rolled back", r, 4)
	if cn.Status.Phase != v1alpha1.CanaryRolledBack || cn.Status.Target.AbortedRevision != "v3" {
		t.Fatalf("rolled back: phase %s target %+v", cn.Status.Phase, cn.Status.Target)
	}
}

func TestTAppTargetRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*v1alpha1.TApp)
		want string
	}{
		"paused": {func(a *v1alpha1.TApp) { a.Spec.UpdateStrategy.Paused = true }, "is paused"},
		"killed": {func(a *v1alpha1.TApp) {
			a.Spec.Statuses = map[string]v1alpha1.InstanceDesiredStatus{"2": "Killed", "9": "Killed"}
		}, "killed instances (2)"},
		"pooled":  {func(a *v1alpha1.TApp) { a.Spec.Templates = map[string]string{"3": "blue", "1": "blue"} }, "templatePool templates (1, 3"},
		"default": {func(a *v1alpha1.TApp) { a.Spec.DefaultTemplateName = "blue" }, "defaultTemplateName blue"},
	} {
		t.Run(name, func(t *testing.T) {
			tapp := games(4, 0, "v1", "v2")
			tc.edit(tapp)
			r := syncTApp(t, tappCanary(), tapp)
			if !r.degraded || r.reason != v1alpha1.ReasonTargetUnsupported || len(inPlace(r).writes) != 0 || !strings.Contains(r.message, tc.want) {
				t.Errorf("degraded %v reason %s writes %+v: %q, want %q in it", r.degraded, r.reason, inPlace(r).writes, r.message, tc.want)
			}
		})
	}
	// A killed instance at or above replicas is no instance of the TApp: nothing refused.
	tapp := games(4, 4, "v1", "v1")
	tapp.Spec.Statuses = map[string]v1alpha1.InstanceDesiredStatus{"4": "Killed", "1": "Running"}
	if r := syncTApp(t, tappCanary(), tapp); r.degraded {
		t.Errorf("killed above replicas refused: %s", r.message)
	}
}

// tappController is a controller over fake clientsets holding objs, with a TApp lister.
func tappController(tapp *v1alpha1.TApp, kubeObjs ...runtime.Object) (*Controller, *fake.Clientset, *k8sfake.Clientset, *record.FakeRecorder) {
	client := fake.NewSimpleClientset(tapp)
	kube := k8sfake.NewClientset(kubeObjs...)
	rec := record.NewFakeRecorder(10)
	c := &Controller{kubeClient: kube, client: client}
	c.Base = base.New(ControllerName, Kind, rec)
	c.canaryIndexer = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{targetIndex: indexByTarget})
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(tapp)
	c.setTAppSource(appslisters.NewTAppLister(idx))
	return c, client, kube, rec
}

func actionLines(actions []k8stesting.Action) []string {
	var got []string
	for _, a := range actions {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if p, ok := a.(k8stesting.PatchAction); ok {
			s += " " + string(p.GetPatch())
		}
		got = append(got, s)
	}
	return got
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A step is one merge patch of spec.updateStrategy.partition; an abort reads the stable
// ControllerRevision and replaces spec.template with its template and drops the pool it did not
// have, in one JSON patch.
func TestTAppTargetWriteActions(t *testing.T) {
	tapp := games(3, 1, "v1", "v2")
	tapp.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"blue": {}}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "v1",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(tapp, v1alpha1.SchemeGroupVersion.WithKind("TApp"))}},
		Data:     runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"metadata":{},"spec":{"containers":[{"name":"game","image":"game:v1"}]}}}}`)},
		Revision: 1,
	}
	c, client, kube, _ := tappController(tapp, rev)
	r := &inPlacePlan{decision: &decision{obs: &observed{target: tappTarget{tapp}}, canary: tappCanary()}, target: tappTarget{tapp}, writes: []targetWrite{
		{kind: setPartition, partition: 2, step: 2},
		{kind: restoreTemplate, revision: "v1", reason: "AnalysisFailed"},
	}}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	sameLines(t, "TApp actions", actionLines(client.Actions()), []string{
		`patch tapps {"spec":{"updateStrategy":{"partition":2}}}`,
		`patch tapps [{"op":"replace","path":"/spec/template","value":{"metadata":{},"spec":{"containers":[{"name":"game","image":"game:v1"}]}}},{"op":"remove","path":"/spec/templatePool"}]`,
	})
	sameLines(t, "kube actions", actionLines(kube.Actions()), []string{"get controllerrevisions"})
	got, err := client.AppsV1alpha1().TApps(ns).Get(context.Background(), "games", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := got.Spec.Template.Spec.Containers[0].Image; img != "game:v1" || got.Spec.TemplatePool != nil || partition.TApp(got) != 2 {
		t.Errorf("stored TApp: image %s pool %v partition %d", img, got.Spec.TemplatePool, partition.TApp(got))
	}
}

// A revision of another TApp of the same name (deleted and re-created) is not written back.
func TestTAppTargetRestoreRefusesAnotherOwner(t *testing.T) {
	tapp := games(3, 1, "v1", "v2")
	rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "v1"}}
	c, client, _, _ := tappController(tapp, rev)
	_, err := tappTarget{tapp}.write(context.Background(), c, tappCanary(), targetWrite{kind: restoreTemplate, revision: "v1"})
	if err == nil || !strings.Contains(err.Error(), `does not belong to TApp "games"`) {
		t.Fatalf("err %v", err)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("TApp written: %v", actionLines(a))
	}
}

// Deleting the Canary between releases sets the partition back to 0; mid-release it leaves the
// partition and says so.
func TestTAppTargetReleaseHold(t *testing.T) {
	c, client, _, _ := tappController(games(4, 4, "v1", "v1"))
	if err := releaseFor(tappCanary()).releaseHold(context.Background(), c, tappCanary()); err != nil {
		t.Fatal(err)
	}
	// Read from the API server, not the cache, which may not show the hold written moments before.
	sameLines(t, "between releases", actionLines(client.Actions()), []string{"get tapps", `patch tapps {"spec":{"updateStrategy":{"partition":0}}}`})

	c, client, _, rec := tappController(games(3, 1, "v1", "v2"))
	if err := releaseFor(tappCanary()).releaseHold(context.Background(), c, tappCanary()); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "mid-release", actionLines(client.Actions()), []string{"get tapps"})
	if ev := <-rec.Events; !strings.Contains(ev, "Warning") || !strings.Contains(ev, "keeps partition 3") {
		t.Errorf("event %q", ev)
	}
}
