package canary

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
)

// targetCanary releases StatefulSet ledger of 4 pods: 1 pod with a 1m pause, 2, then all.
func targetCanary() *v1alpha1.Canary {
	return &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger", Generation: 1, UID: "cn-uid"},
		Spec: v1alpha1.CanarySpec{
			Replicas:  4,
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: "StatefulSet", Name: "ledger"},
			Steps: []v1alpha1.CanaryStep{
				{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: time.Minute}}},
				{Replicas: intstr.FromInt32(2)},
				{Replicas: intstr.FromInt32(4)},
			},
		},
	}
}

// ledger is the StatefulSet at partition p, with updated pods on update and the rest on current,
// every pod ready and available.
func ledger(p, updated int32, current, update string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger", Generation: 2, UID: "sts-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](4),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(p)}},
		},
		Status: appsv1.StatefulSetStatus{
			ObservedGeneration: 2, Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4, UpdatedReplicas: updated,
			CurrentRevision: current, UpdateRevision: update,
		},
	}
}

func planTarget(cn *v1alpha1.Canary, sts *appsv1.StatefulSet, holder string) *plan {
	obs := &observed{canary: cn, targetHolder: holder}
	if sts != nil {
		obs.target = statefulSetTarget{sts}
	}
	return computePlan(obs, metav1.NewTime(start))
}

// sync runs one plan and carries its status forward, as the status write would.
func syncTarget(t *testing.T, cn *v1alpha1.Canary, sts *appsv1.StatefulSet) *plan {
	t.Helper()
	r := planTarget(cn, sts, "")
	cn.Status = computeStatus(r, nil)
	return r
}

func TestTargetIdleIsHeldAtReplicas(t *testing.T) {
	cn := targetCanary()
	r := syncTarget(t, cn, ledger(0, 4, "v1", "v1"))
	if w := inPlace(r).writes; len(w) != 1 || w[0].kind != setPartition || w[0].partition != 4 {
		t.Fatalf("writes %+v, want the partition set to 4", w)
	}
	if cn.Status.Phase != v1alpha1.CanaryCompleted || r.reason != v1alpha1.ReasonHolding || cn.Status.Target.Partition != 4 {
		t.Errorf("phase %s reason %s target %+v", cn.Status.Phase, r.reason, cn.Status.Target)
	}
	// Held already: nothing to write.
	if r := syncTarget(t, cn, ledger(4, 4, "v1", "v1")); len(inPlace(r).writes) != 0 {
		t.Errorf("held target: writes %+v", inPlace(r).writes)
	}
}

func TestTargetReleaseThroughTheSteps(t *testing.T) {
	cn := targetCanary()
	syncTarget(t, cn, ledger(4, 4, "v1", "v1"))

	// The template changed: step 1 lowers the partition to 3.
	r := syncTarget(t, cn, ledger(4, 0, "v1", "v2"))
	if w := inPlace(r).writes; len(w) != 1 || w[0].partition != 3 {
		t.Fatalf("step 1 writes %+v, want partition 3", w)
	}
	if cn.Status.CurrentBatch != 1 || cn.Status.Target.StableRevision != "v1" || cn.Status.Target.UpdateRevision != "v2" {
		t.Fatalf("status %+v target %+v", cn.Status.Batches, cn.Status.Target)
	}
	// Step 1's pod is updated and ready: its timed pause bakes, nothing written.
	r = syncTarget(t, cn, ledger(3, 1, "v1", "v2"))
	if len(inPlace(r).writes) != 0 || cn.Status.Batches[0].State != v1alpha1.BatchBaking || r.requeueAfter != time.Minute {
		t.Fatalf("step 1 done: writes %+v state %s requeue %s", inPlace(r).writes, cn.Status.Batches[0].State, r.requeueAfter)
	}
	if cn.Status.CanaryReplicas != 1 || cn.Status.StableReplicas != 3 {
		t.Errorf("replicas canary %d stable %d, want 1 and 3", cn.Status.CanaryReplicas, cn.Status.StableReplicas)
	}
	// A promote ends the pause: step 2 lowers the partition to 2.
	cn.Spec.ApprovedBatch = 1
	if r = syncTarget(t, cn, ledger(3, 1, "v1", "v2")); len(inPlace(r).writes) != 1 || inPlace(r).writes[0].partition != 2 {
		t.Fatalf("step 2 writes %+v", inPlace(r).writes)
	}
	// Step 2 done goes straight to step 3: partition 0.
	if r = syncTarget(t, cn, ledger(2, 2, "v1", "v2")); len(inPlace(r).writes) != 1 || inPlace(r).writes[0].partition != 0 {
		t.Fatalf("step 3 writes %+v", inPlace(r).writes)
	}
	// Every pod updated: the StatefulSet makes v2 current; the release completes and holds.
	r = syncTarget(t, cn, ledger(0, 4, "v2", "v2"))
	if cn.Status.Phase != v1alpha1.CanaryCompleted || r.reason != v1alpha1.ReasonCompleted {
		t.Fatalf("phase %s reason %s: %s", cn.Status.Phase, r.reason, r.message)
	}
	if w := inPlace(r).writes; len(w) != 1 || w[0].partition != 4 {
		t.Errorf("after completion writes %+v, want the hold at 4", w)
	}
	if cn.Status.Target.StableRevision != "v2" {
		t.Errorf("stable revision %s after completion", cn.Status.Target.StableRevision)
	}
}

func TestTargetAbortWritesTheStableTemplateBack(t *testing.T) {
	cn := targetCanary()
	syncTarget(t, cn, ledger(4, 4, "v1", "v1"))
	syncTarget(t, cn, ledger(4, 0, "v1", "v2"))
	cn.Spec.Rollback = true
	r := syncTarget(t, cn, ledger(3, 1, "v1", "v2"))
	if w := inPlace(r).writes; len(w) != 1 || w[0].kind != restoreTemplate || w[0].revision != "v1" {
		t.Fatalf("abort writes %+v, want v1's template written back", w)
	}
	if cn.Status.Phase != v1alpha1.CanaryRollingBack {
		t.Fatalf("phase %s", cn.Status.Phase)
	}
	// v1 is the update revision again and its pod is on its way back: no write, the partition
	// stays where it is.
	r = syncTarget(t, cn, ledger(3, 3, "v1", "v1"))
	if len(inPlace(r).writes) != 0 || cn.Status.Phase != v1alpha1.CanaryRollingBack {
		t.Fatalf("rolling back: writes %+v phase %s", inPlace(r).writes, cn.Status.Phase)
	}
	r = syncTarget(t, cn, ledger(3, 4, "v1", "v1"))
	if cn.Status.Phase != v1alpha1.CanaryRolledBack || len(inPlace(r).writes) != 1 || inPlace(r).writes[0].partition != 4 {
		t.Fatalf("rolled back: phase %s writes %+v", cn.Status.Phase, inPlace(r).writes)
	}
}

// After the last step made the new revision current, a failed check of that step still returns
// every pod to the revision the release started from.
func TestTargetAbortAfterTheLastStepKeepsTheStableRevision(t *testing.T) {
	cn := targetCanary()
	cn.Spec.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(4), Pause: &v1alpha1.CanaryPause{}}}
	syncTarget(t, cn, ledger(4, 4, "v1", "v1"))
	syncTarget(t, cn, ledger(4, 0, "v1", "v2"))
	syncTarget(t, cn, ledger(0, 4, "v2", "v2")) // tail: waits for promotion
	if cn.Status.Phase != v1alpha1.CanaryPaused || cn.Status.Target.StableRevision != "v1" {
		t.Fatalf("tail: phase %s target %+v", cn.Status.Phase, cn.Status.Target)
	}
	cn.Spec.Rollback = true
	r := syncTarget(t, cn, ledger(0, 4, "v2", "v2"))
	if w := inPlace(r).writes; len(w) != 1 || w[0].kind != restoreTemplate || w[0].revision != "v1" {
		t.Fatalf("writes %+v, want v1 written back", w)
	}
	// The StatefulSet now updates to v1 from v2 (current): still v1 to go back to.
	r = syncTarget(t, cn, ledger(0, 1, "v2", "v1"))
	if len(inPlace(r).writes) != 0 || cn.Status.Target.StableRevision != "v1" {
		t.Fatalf("rolling back from the tail: writes %+v target %+v", inPlace(r).writes, cn.Status.Target)
	}
}

func TestTargetRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		sts    *appsv1.StatefulSet
		holder string
		edit   func(*v1alpha1.Canary)
		reason string
	}{
		"missing":  {reason: v1alpha1.ReasonTargetNotFound},
		"held":     {sts: ledger(4, 4, "v1", "v1"), holder: "first", reason: v1alpha1.ReasonTargetHeld},
		"replicas": {sts: ledger(4, 4, "v1", "v1"), edit: func(c *v1alpha1.Canary) { c.Spec.Replicas = 5 }, reason: v1alpha1.ReasonInvalidSpec},
		"on delete": {sts: func() *appsv1.StatefulSet {
			s := ledger(0, 4, "v1", "v2")
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			return s
		}(), reason: v1alpha1.ReasonTargetUnsupported},
	} {
		t.Run(name, func(t *testing.T) {
			cn := targetCanary()
			if tc.edit != nil {
				tc.edit(cn)
			}
			r := planTarget(cn, tc.sts, tc.holder)
			if !r.degraded || r.reason != tc.reason || len(inPlace(r).writes) != 0 {
				t.Errorf("degraded %v reason %s writes %+v: %s", r.degraded, r.reason, inPlace(r).writes, r.message)
			}
		})
	}
}

// An abort reads the stable ControllerRevision and applies its data to the StatefulSet: one get,
// one strategic merge patch carrying the revision's template.
func TestRestoreRevisionActions(t *testing.T) {
	sts := ledger(3, 1, "v1", "v2")
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "v1",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Data:     runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"ledger","image":"ledger:v1"}]}}}}`)},
		Revision: 1,
	}
	kube := k8sfake.NewClientset(sts, rev)
	c := &Controller{kubeClient: kube}
	c.Base = base.New(ControllerName, Kind, record.NewFakeRecorder(10))
	r := &inPlacePlan{decision: &decision{obs: &observed{target: statefulSetTarget{sts}}, canary: targetCanary()}, target: statefulSetTarget{sts}, writes: []targetWrite{{kind: restoreTemplate, revision: "v1", reason: "AnalysisFailed"}}}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	var got []string
	for _, a := range kube.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if p, ok := a.(k8stesting.PatchAction); ok {
			s += " " + string(p.GetPatch())
		}
		got = append(got, s)
	}
	want := []string{"get controllerrevisions", "patch statefulsets " + string(rev.Data.Raw)}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("actions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A retry after an abort on request (spec.rollback cleared, spec.retries raised, as kubectl
// workload retry does) writes the aborted revision back; clearing spec.rollback alone does not.
func TestTargetRetryAfterAbortOnRequest(t *testing.T) {
	cn := targetCanary()
	syncTarget(t, cn, ledger(4, 4, "v1", "v1"))
	syncTarget(t, cn, ledger(4, 0, "v1", "v2"))
	cn.Spec.Rollback = true
	syncTarget(t, cn, ledger(3, 1, "v1", "v2"))
	syncTarget(t, cn, ledger(3, 4, "v1", "v1"))
	if cn.Status.Phase != v1alpha1.CanaryRolledBack || cn.Status.Target.AbortedRevision != "v2" {
		t.Fatalf("phase %s target %+v", cn.Status.Phase, cn.Status.Target)
	}
	cn.Spec.Rollback = false
	if r := syncTarget(t, cn, ledger(4, 4, "v1", "v1")); len(inPlace(r).writes) != 0 {
		t.Fatalf("rollback cleared alone: writes %+v", inPlace(r).writes)
	}
	cn.Spec.Retries = 1
	r := syncTarget(t, cn, ledger(4, 4, "v1", "v1"))
	if w := inPlace(r).writes; len(w) != 1 || w[0].kind != restoreTemplate || w[0].revision != "v2" {
		t.Fatalf("retry writes %+v, want v2 written back", w)
	}
	if cn.Status.Target.AbortedRevision != "" {
		t.Errorf("aborted revision %q kept after the retry", cn.Status.Target.AbortedRevision)
	}
}

// The next release of the target waits for a person at each pause again: the approval of the
// last release is set back to 0 as the new one starts.
func TestTargetNextReleaseForgetsApprovals(t *testing.T) {
	cn := targetCanary()
	cn.Spec.Steps[0].Pause = &v1alpha1.CanaryPause{}
	cn.Spec.ApprovedBatch = 1 // the last release's promote
	cn.Status.Target = &v1alpha1.CanaryTargetStatus{StableRevision: "v1", UpdateRevision: "v1"}
	r := syncTarget(t, cn, ledger(4, 0, "v1", "v2"))
	if r.resetApproval != 1 {
		t.Fatalf("resetApproval %d, want the approval 1 set back to 0", r.resetApproval)
	}
	r = syncTarget(t, cn, ledger(3, 1, "v1", "v2"))
	if cn.Status.Phase != v1alpha1.CanaryPaused || len(inPlace(r).writes) != 0 {
		t.Errorf("step 1 done: phase %s writes %+v, want Paused for a person", cn.Status.Phase, inPlace(r).writes)
	}
}
