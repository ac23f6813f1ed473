package tapp

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
)

// The first sync of a TApp records its templates as revision 1, current and updated at once.
func TestFirstSyncRecordsRevision(t *testing.T) {
	tp := newTApp("web", 1)
	f := newFixtureWithHistory(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)
	sameActions(t, f.sync("web"), revisionCreated(t, tp), "update tapps/status web")
	created := f.findActions("create", "controllerrevisions")[0].(core.CreateAction).GetObject().(*appsv1.ControllerRevision)
	if created.Revision != 1 || created.Labels[appsv1alpha1.LabelManagedBy] != appsv1alpha1.ManagedByAgent ||
		created.Labels[appsv1alpha1.LabelTAppName] != "web" || created.OwnerReferences[0].UID != tp.UID {
		t.Fatalf("revision %d, labels %v, owners %v", created.Revision, created.Labels, created.OwnerReferences)
	}
	st := f.statusWritten().Status
	if st.UpdateRevision != created.Name || st.CurrentRevision != created.Name || st.CollisionCount != nil {
		t.Fatalf("status revisions %q %q %v, want %q", st.CurrentRevision, st.UpdateRevision, st.CollisionCount, created.Name)
	}
}

// A template change, whoever made it, is a new revision; the current revision stays the old one
// until every instance runs the new templates.
func TestTemplateChangeRecordsRevision(t *testing.T) {
	tp := newTApp("web", 1)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()
	old := tp.Status.UpdateRevision

	tp.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	tp.Generation++
	f.setTApp(tp)
	f.sync("web")
	created := f.findActions("create", "controllerrevisions")
	if len(created) != 1 {
		t.Fatalf("%d revisions created, want 1", len(created))
	}
	rev := created[0].(core.CreateAction).GetObject().(*appsv1.ControllerRevision)
	st := f.statusWritten().Status
	if rev.Revision != 2 || st.UpdateRevision != rev.Name || st.CurrentRevision != old {
		t.Fatalf("revision %d %s; status current %q updated %q, want current %q", rev.Revision, rev.Name, st.CurrentRevision, st.UpdateRevision, old)
	}
}

// Templates that come back to an older revision reuse it, renumbered as the newest.
func TestTemplateBackRenumbersRevision(t *testing.T) {
	tp := newTApp("web", 1)
	v1 := recordedRevision(t, tp, 1)
	v2tp := tp.DeepCopy()
	v2tp.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	v2 := recordedRevision(t, v2tp, 2)
	tp.Status.CurrentRevision, tp.Status.UpdateRevision = v2.Name, v2.Name
	f := newFixtureWithHistory(t, []*appsv1alpha1.TApp{tp}, nil, nil, v1, v2)
	acts := f.sync("web")
	sameActions(t, acts, "update controllerrevisions "+v1.Name, "create pods web-0", "patch pods/status web-0", "update tapps/status web")
	renumbered := f.findActions("update", "controllerrevisions")[0].(core.UpdateAction).GetObject().(*appsv1.ControllerRevision)
	if renumbered.Revision != 3 {
		t.Fatalf("renumbered to %d, want 3", renumbered.Revision)
	}
	if st := f.statusWritten().Status; st.UpdateRevision != v1.Name || st.CurrentRevision != v2.Name {
		t.Fatalf("status current %q updated %q", st.CurrentRevision, st.UpdateRevision)
	}
}

// Beyond revisionHistoryLimit the oldest revisions go, never the current or the updated one.
func TestRevisionHistoryLimit(t *testing.T) {
	tp := newTApp("web", 1)
	tp.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	var objs []runtime.Object
	var revs []*appsv1.ControllerRevision
	for i, image := range []string{"a", "b", "c", "d"} {
		v := tp.DeepCopy()
		v.Spec.Template.Spec.Containers[0].Image = image
		r := recordedRevision(t, v, int64(i+1))
		revs = append(revs, r)
		objs = append(objs, r)
	}
	latest := recordedRevision(t, tp, 5)
	objs = append(objs, latest)
	// Revision 1 is still the current one (the rollout to the latest has not finished).
	tp.Status.CurrentRevision, tp.Status.UpdateRevision = revs[0].Name, latest.Name
	f := newFixtureWithHistory(t, []*appsv1alpha1.TApp{tp}, nil, nil, objs...)
	sameActions(t, f.sync("web"), "delete controllerrevisions "+revs[1].Name, "delete controllerrevisions "+revs[2].Name,
		"create pods web-0", "patch pods/status web-0", "update tapps/status web")
}

// A revision name taken by other data is a hash collision: the collision count goes up and the
// revision gets the next name.
func TestRevisionNameCollision(t *testing.T) {
	tp := newTApp("web", 1)
	taken := recordedRevision(t, tp, 1)
	taken.Data.Raw = []byte(`{"other":true}`)
	taken.OwnerReferences = nil
	f := newFixtureWithHistory(t, []*appsv1alpha1.TApp{tp}, []*corev1.Pod{runningPod(tp, 0)}, nil, taken)
	next := tp.DeepCopy()
	next.Status.CollisionCount = ptr.To[int32](1)
	sameActions(t, f.sync("web"), "create controllerrevisions "+taken.Name, "get controllerrevisions "+taken.Name,
		revisionCreated(t, next), "update tapps/status web")
	st := f.statusWritten().Status
	if st.CollisionCount == nil || *st.CollisionCount != 1 || st.UpdateRevision != recordedRevision(t, next, 1).Name {
		t.Fatalf("status collisionCount %v, updateRevision %q", st.CollisionCount, st.UpdateRevision)
	}
}

// The plan is a pure function of the TApp and its revisions.
func TestComputeRevisionPlan(t *testing.T) {
	tp := newTApp("web", 1)
	rp, err := computeRevisionPlan(tp, nil)
	if err != nil || rp.step.Existing != nil || rp.step.Number != 1 || len(rp.excess) != 0 {
		t.Fatalf("no history: %+v, %v", rp, err)
	}
	data, _ := revisiondata.EncodeTApp(&tp.Spec)
	if rp.step.Candidate.Name != revision.Name("web", revision.Hash(data, nil)) {
		t.Fatalf("candidate %s", rp.step.Candidate.Name)
	}
	same := recordedRevision(t, tp, 4)
	rp, _ = computeRevisionPlan(tp, []*appsv1.ControllerRevision{same})
	if rp.step.Existing != same || rp.step.Number != 4 {
		t.Fatalf("unchanged templates: %+v", rp.step)
	}
	pooled := tp.DeepCopy()
	pooled.Spec.TemplatePool = map[string]corev1.PodTemplateSpec{"canary": tp.Spec.Template}
	rp, _ = computeRevisionPlan(pooled, []*appsv1.ControllerRevision{same})
	if rp.step.Existing != nil || rp.step.Number != 5 {
		t.Fatalf("a templatePool change must be a new revision: %+v", rp.step)
	}
}

// A revision create the API server refuses shows as ReplicaFailure with the server's message,
// and the sync returns the error to be retried.
func TestRefusedRevisionIsACondition(t *testing.T) {
	tp := newTApp("web", 1)
	f := newFixtureWithHistory(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)
	f.kubeClient.PrependReactor("create", "controllerrevisions", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(appsv1.Resource("controllerrevisions"), "web-x", errors.New("quota exceeded"))
	})
	f.clearActions()
	if err := f.c.syncHandler(context.Background(), cache.NewObjectName(ns, "web")); err == nil {
		t.Fatal("sync succeeded although the revision create was refused")
	}
	c := meta.FindStatusCondition(f.statusWritten().Status.Conditions, appsv1alpha1.ConditionReplicaFailure)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != appsv1alpha1.ReasonRevisionFailed || !strings.Contains(c.Message, "quota exceeded") {
		t.Fatalf("ReplicaFailure %+v, want True RevisionFailed with the server's message", c)
	}
}

// A template change held back by the partition leaves the current revision the old one, as a
// StatefulSet's: the rollout is complete as far as the partition lets it go, but no instance runs
// the new revision (a Canary holding the TApp reads this as a release to make).
func TestPartitionHoldsTheCurrentRevision(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.Partition = ptr.To[int32](2)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()
	old := tp.Status.CurrentRevision

	tp.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, f.sync("web"), revisionCreated(t, tp), "update tapps/status web")
	st := f.statusWritten().Status
	if c := meta.FindStatusCondition(st.Conditions, appsv1alpha1.ConditionProgressing); c == nil || c.Reason != appsv1alpha1.ReasonRolloutComplete {
		t.Fatalf("Progressing %+v, want RolloutComplete (nothing the partition lets go is left)", c)
	}
	if st.UpdateRevision == old || st.CurrentRevision != old || st.UpdatedReplicas != 0 {
		t.Fatalf("status current %q updated %q (%d instances updated), want current %q kept", st.CurrentRevision, st.UpdateRevision, st.UpdatedReplicas, old)
	}
}

// An instance below the partition that lost its pod is made again from the current revision's
// template, as a StatefulSet's ordinal below its partition: with partition 2 holding a change
// to v2, web-1 (deleted) comes back on v1 while web-2, an instance added above the partition,
// is made on v2; neither is touched by the next sync. Should the current revision be missing
// from the cache, the instance is made from its own template, as before.
func TestPartitionMakesLowerInstancesFromTheCurrentRevision(t *testing.T) {
	tp := newTApp("web", 2)
	tp.Spec.UpdateStrategy.Partition = ptr.To[int32](2)
	v1 := tp.Spec.Template.Spec.Containers[0].Image
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0, 1), nil)
	sameActions(t, f.sync("web"), "update tapps/status web")
	tp = f.feedStatus()
	v1Hash := TemplateHash(&tp.Spec.Template)

	tp.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	tp.Generation++
	f.setTApp(tp)
	sameActions(t, f.sync("web"), revisionCreated(t, tp), "update tapps/status web")
	tp = f.feedStatus()
	tp.Spec.Replicas = ptr.To[int32](3)
	tp.Generation++
	f.setTApp(tp)
	f.removePod("web-1")
	sameActions(t, f.sync("web"), "create pods web-1", "patch pods/status web-1", "create pods web-2", "patch pods/status web-2", "update tapps/status web")
	created := createdPods(t, f)
	if p := created["web-1"]; p.Spec.Containers[0].Image != v1 || p.Labels[appsv1alpha1.LabelTemplateHash] != v1Hash {
		t.Errorf("web-1 (below the partition) made with %s, hash %s; want %s, hash %s", p.Spec.Containers[0].Image, p.Labels[appsv1alpha1.LabelTemplateHash], v1, v1Hash)
	}
	if p := created["web-2"]; p.Spec.Containers[0].Image != "example.com/app:v2" || p.Labels[appsv1alpha1.LabelTemplateHash] != TemplateHash(&tp.Spec.Template) {
		t.Errorf("web-2 (above the partition) made with %s, want example.com/app:v2", p.Spec.Containers[0].Image)
	}
	st := f.feedStatus().Status
	observeCreated(t, f, created)
	for _, name := range []string{"web-1", "web-2"} {
		p := f.cachedPod(name)
		p.Status.Phase = corev1.PodRunning
		setReady(p, true)
		f.setPod(p)
	}
	if acts := f.sync("web"); len(f.findActions("patch", "pods"))+len(f.findActions("delete", "pods")) != 0 {
		t.Errorf("the held instance was updated: %q", acts)
	}
	if st.CurrentRevision == st.UpdateRevision {
		t.Errorf("status current revision %q, want the one before the change", st.CurrentRevision)
	}

	// The current revision gone from the cache: the instance's own template.
	rev, exists, _ := f.revisionIndexer.GetByKey(ns + "/" + st.CurrentRevision)
	if !exists {
		t.Fatalf("revision %s not in the cache", st.CurrentRevision)
	}
	must(t, f.revisionIndexer.Delete(rev))
	f.removePod("web-0")
	f.sync("web")
	if p := createdPods(t, f)["web-0"]; p == nil || p.Spec.Containers[0].Image != "example.com/app:v2" {
		t.Errorf("web-0 without its current revision made as %+v, want from its own template (v2)", p)
	}
}
