package canary

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// playTotal syncs, with kube-controller-manager played at its fastest before each sync, until
// the Canary's phase is phase and a sync writes no Deployment, checking the bounds against the
// total of the moment: pods never above it plus maxSurge, and no scale-down leaving fewer pods
// available than the total, or than were available when the total was just raised. It returns the successive (canary, stable) sizes.
func (f *fixture) playTotal(phase v1alpha1.CanaryPhase, maxSurge int32) []string {
	f.t.Helper()
	var sizes []string
	available := func() int32 {
		return availableOf(f.deployment("checkout")) + availableOf(f.deployment("checkout-canary"))
	}
	pods := func() int32 { return specOf(f.deployment("checkout")) + specOf(f.deployment("checkout-canary")) }
	floor := min(f.total(), available())
	ceiling := max(f.total()+maxSurge, pods())
	for i, moved := 0, true; i < 60 && (moved || f.canary().Status.Phase != phase); i++ {
		total := f.total()
		stable, canary := f.deployment("checkout"), f.deployment("checkout-canary")
		if s := fmt.Sprintf("%d+%d", specOf(canary), specOf(stable)); len(sizes) == 0 || sizes[len(sizes)-1] != s {
			sizes = append(sizes, s)
		}
		// A total just raised is not available yet: the bound is what was, up to the total.
		f.playDeployments(ceiling, min(total, floor))
		floor, ceiling = min(total, available()), max(total+maxSurge, pods())
		f.refresh()
		moved = slices.ContainsFunc(f.sync(), func(a string) bool { return strings.Contains(a, "deployments") })
	}
	if got := f.canary().Status.Phase; got != phase {
		f.t.Fatalf("phase %s after 60 syncs, want %s: %s", got, phase, f.canary().Status.Message)
	}
	return sizes
}

// total is the total the Canary's release shares out: spec.replicas, or without it the total a
// Deployment target's release recorded, or between releases that Deployment's replicas.
func (f *fixture) total() int32 {
	cn := f.canary()
	switch {
	case cn.Spec.Replicas != 0:
		return cn.Spec.Replicas
	case cn.Status.ReleaseReplicas != 0:
		return cn.Status.ReleaseReplicas
	}
	return specOf(f.deployment("checkout"))
}

// An autoscaler raises the total (spec.replicas, through the Canary's scale subresource) in the
// middle of a release between two Deployments, then lowers it: every step's pods are the step's
// share of the total of the moment, the surge bound and the available bound hold against it,
// and the release completes with the autoscaler's last count, without a contest.
func TestPairFollowsAMovingTotal(t *testing.T) {
	cn := stepsCanary(func(s *v1alpha1.CanarySpec) { s.MaxSurge = ptr.To(intstr.FromInt32(2)) },
		v1alpha1.CanaryStep{Replicas: intstr.FromString("50%"), Pause: &v1alpha1.CanaryPause{}},
		v1alpha1.CanaryStep{Replicas: intstr.FromString("100%")})
	f := newFixture(t, cn, newStable(10))
	f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	if got := fmt.Sprint(f.playTotal(v1alpha1.CanaryPaused, 2)); got != "[2+10 2+8 4+8 4+6 5+6 5+5]" {
		t.Errorf("step 1 of 10 pods: sizes %s", got)
	}
	if st := f.canary().Status; st.CanaryReplicas != 5 || st.StableReplicas != 5 || st.Replicas != 10 || st.Selector != "app=checkout,track=stable" {
		t.Fatalf("paused at step 1: status %+v", st)
	}

	// The autoscaler scales to 14 while step 1 is paused: its share grows to 7 and 7, the stable
	// Deployment first covering what the canary does not serve yet.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Replicas = 14 })
	if got := fmt.Sprint(f.playTotal(v1alpha1.CanaryPaused, 2)); got != "[5+5 7+9 7+7]" {
		t.Errorf("step 1 of 14 pods: sizes %s", got)
	}
	if st := f.canary().Status; st.Phase != v1alpha1.CanaryPaused || st.Replicas != 14 || st.CurrentBatch != 1 {
		t.Fatalf("at 14: phase %s replicas %d batch %d: %s", st.Phase, st.Replicas, st.CurrentBatch, st.Message)
	}

	// A promote, then the autoscaler scales down to 6 mid-step: the release ends with 6 canary pods.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.refresh()
	f.sync()
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Replicas = 6 })
	f.playTotal(v1alpha1.CanaryCompleted, 2)
	if c, s := specOf(f.deployment("checkout-canary")), specOf(f.deployment("checkout")); c != 6 || s != 0 {
		t.Errorf("completed with canary %d stable %d, want 6 and 0", c, s)
	}
	for _, e := range f.events() {
		if strings.Contains(e, "Contested") {
			t.Errorf("event %q: an autoscaler's count is not a contest", e)
		}
	}
}

// syncFollowing runs one sync of a StatefulSet target as observe reads it (followTarget) and
// carries its status forward.
func syncFollowing(cn *v1alpha1.Canary, sts *appsv1.StatefulSet) *plan {
	t := statefulSetTarget{sts}
	r := computePlan(&observed{canary: followTarget(cn, t), target: t}, metav1.NewTime(start))
	cn.Status = computeStatus(r, nil)
	return r
}

// scaled is ledger with replicas pods.
func scaled(sts *appsv1.StatefulSet, replicas int32) *appsv1.StatefulSet {
	sts.Spec.Replicas = ptr.To(replicas)
	sts.Status.Replicas, sts.Status.ReadyReplicas, sts.Status.AvailableReplicas = replicas, replicas, replicas
	return sts
}

// With spec.replicas left out, a target's release follows the replicas its autoscaler sets:
// the partition keeps each step's share of the total of the moment on the new revision, and
// spec.replicas is never written.
func TestTargetFollowsItsReplicas(t *testing.T) {
	cn := targetCanary()
	cn.Spec.Replicas = 0
	cn.Spec.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromString("25%"), Pause: &v1alpha1.CanaryPause{}}, {Replicas: intstr.FromString("100%")}}
	wantPartition(t, "held at 4", syncFollowing(cn, ledger(0, 4, "v1", "v1")), 4)
	wantPartition(t, "step 1: 1 of 4", syncFollowing(cn, ledger(4, 0, "v1", "v2")), 3)
	if r := syncFollowing(cn, ledger(3, 1, "v1", "v2")); len(inPlace(r).writes) != 0 || cn.Status.Phase != v1alpha1.CanaryPaused {
		t.Fatalf("step 1 done: writes %+v phase %s", inPlace(r).writes, cn.Status.Phase)
	}
	// Its autoscaler scales it to 8 while step 1 is paused: step 1 holds 2 of 8, the new pods
	// the StatefulSet made at ordinals 4 to 7 on v2 beyond those go back to v1.
	wantPartition(t, "step 1: 2 of 8", syncFollowing(cn, scaled(ledger(3, 5, "v1", "v2"), 8)), 6)
	if cn.Status.Phase != v1alpha1.CanaryPaused || cn.Status.CurrentBatch != 1 || cn.Spec.Replicas != 0 {
		t.Fatalf("at 8: phase %s batch %d spec.replicas %d", cn.Status.Phase, cn.Status.CurrentBatch, cn.Spec.Replicas)
	}
	if r := syncFollowing(cn, scaled(ledger(6, 2, "v1", "v2"), 8)); len(inPlace(r).writes) != 0 || cn.Status.Phase != v1alpha1.CanaryPaused {
		t.Fatalf("step 1 of 8 done: writes %+v phase %s", inPlace(r).writes, cn.Status.Phase)
	}
	if cn.Status.CanaryReplicas != 2 || cn.Status.StableReplicas != 6 || cn.Status.Replicas != 8 {
		t.Errorf("status canary %d stable %d replicas %d, want 2, 6, 8", cn.Status.CanaryReplicas, cn.Status.StableReplicas, cn.Status.Replicas)
	}
	// Scaled down to 2 and promoted: the last step releases both.
	cn.Spec.ApprovedBatch = 1
	wantPartition(t, "step 2: 2 of 2", syncFollowing(cn, scaled(ledger(6, 0, "v1", "v2"), 2)), 0)
}

// hpa is a HorizontalPodAutoscaler of the apps/v1 kind named by target.
func hpa(name, kind, target string) *autoscalingv2.HorizontalPodAutoscaler {
	apiVersion := "apps/v1"
	if kind == Kind {
		apiVersion = v1alpha1.SchemeGroupVersion.String()
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: target},
			MaxReplicas:    20,
		},
	}
}

// A HorizontalPodAutoscaler on the stable Deployment of a pair is refused before anything is
// written, naming it and telling to point it at the Canary; pointed at the Canary, the release
// goes on. One on another Deployment is none of the Canary's business.
func TestAutoscaledStableIsRefused(t *testing.T) {
	f := midRelease(t, v1alpha1.PauseNone, 2, U, 1, 10, nil)
	hpas := f.kube.AutoscalingV2().HorizontalPodAutoscalers(ns)
	if _, err := hpas.Create(context.Background(), hpa("other", "Deployment", "payments"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := hpas.Create(context.Background(), hpa("checkout", "Deployment", "checkout"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.step(writeStatus)
	cn := f.canary()
	cond := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.ConditionDegraded)
	if cn.Status.Phase != v1alpha1.CanaryDegraded || cond == nil || cond.Reason != v1alpha1.ReasonAutoscaledDeployment ||
		!strings.Contains(cond.Message, `HorizontalPodAutoscaler "checkout" scales Deployment "checkout"`) ||
		!strings.Contains(cond.Message, "kind: Canary, name: checkout") {
		t.Fatalf("phase %s condition %+v", cn.Status.Phase, cond)
	}
	f.settled()

	if _, err := hpas.Update(context.Background(), hpa("checkout", Kind, "checkout"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.step(patchCanary+replicas(4), patchStable+replicas(9), writeStatus)
	if cn := f.canary(); cn.Status.Phase != v1alpha1.CanaryProgressing {
		t.Errorf("pointed at the Canary: phase %s: %s", cn.Status.Phase, cn.Status.Message)
	}
}

// An event of a HorizontalPodAutoscaler enqueues the Canaries that read the Deployment it
// scales, and no other.
func TestAutoscalerEventsEnqueueTheirCanary(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	for _, tc := range []struct {
		hpa  *autoscalingv2.HorizontalPodAutoscaler
		want int
	}{
		{hpa("other", "Deployment", "payments"), 0},
		{hpa("on-the-canary", Kind, "checkout"), 0},
		{hpa("on-the-stable", "Deployment", "checkout"), 1},
	} {
		f.ctrl.handleAutoscaler(tc.hpa)
		if got := f.ctrl.Queue.Len(); got != tc.want {
			t.Errorf("HPA %s: %d Canaries queued, want %d", tc.hpa.Name, got, tc.want)
		}
	}
}

// A held Deployment target follows the Canary's total between releases (an autoscaler pointed
// at the Canary scales it there): spec.replicas 2 → 4 scales the paused Deployment to 4, with no
// condition; a scale of the Deployment by someone else is set back to the Canary's total. Only
// the first hold refuses a difference, as InvalidSpec, and writes nothing to the Deployment.
func TestHeldDeploymentTargetFollowsTheCanary(t *testing.T) {
	f := heldTarget(t)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Replicas = 4 })
	f.step(`patch deployments checkout {"spec":{"replicas":4}}`, "update canaries/status checkout")
	c := f.status(v1alpha1.CanaryCompleted, 0)
	if c.Status.Replicas != 4 || meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionDegraded) {
		t.Errorf("status.replicas %d, conditions %+v: want 4, not Degraded", c.Status.Replicas, c.Status.Conditions)
	}
	f.pods("checkout", 4, 4, 4)
	f.step("update canaries/status checkout") // the status counts the 4 available pods
	f.settled()
	f.editDeployment("checkout", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](7) })
	f.step(`patch deployments checkout {"spec":{"replicas":4}}`)

	first := depTargetCanary()
	first.Spec.Replicas = 3
	f = newFixture(t, first, newStable(2))
	f.step("patch canaries checkout merge annotations", "update canaries/status checkout")
	d := meta.FindStatusCondition(f.canary().Status.Conditions, v1alpha1.ConditionDegraded)
	if d == nil || d.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(d.Message, `Deployment "checkout" has 2 replicas`) {
		t.Errorf("first hold with 3 replicas for 2: Degraded %+v, want InvalidSpec", d)
	}
}

// A total raised after a completed release (an autoscaler scaling the Canary) grows the canary
// Deployment alone: the stable Deployment, whose template the release retired, stays at 0, and
// the release stays Completed.
func TestTotalRaisedAfterCompletionGrowsOnlyTheCanary(t *testing.T) {
	cn := stepsCanary(func(s *v1alpha1.CanarySpec) { s.MaxSurge = ptr.To(intstr.FromInt32(2)) },
		v1alpha1.CanaryStep{Replicas: intstr.FromString("100%")})
	f := newFixture(t, cn, newStable(10))
	f.step(addFinalizer, writeSnapshot, createCanaryDep, writeStatus)
	f.playTotal(v1alpha1.CanaryCompleted, 2)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Replicas = 14 })
	sizes := f.playTotal(v1alpha1.CanaryCompleted, 2)
	for _, s := range sizes {
		if !strings.HasSuffix(s, "+0") {
			t.Errorf("sizes %v: the stable Deployment grew back after the release completed", sizes)
			break
		}
	}
	if c, s := specOf(f.deployment("checkout-canary")), specOf(f.deployment("checkout")); c != 14 || s != 0 {
		t.Errorf("at 14 after completion: canary %d stable %d, want 14 and 0", c, s)
	}
	if st := f.canary().Status; st.Phase != v1alpha1.CanaryCompleted || st.Replicas != 14 {
		t.Errorf("phase %s, status.replicas %d: %s", st.Phase, st.Replicas, st.Message)
	}
}

// A Deployment target without spec.replicas follows its own replicas between releases (an
// autoscaler on it is followed then, never set back); a release shares out the replicas it
// found when it started, recorded in status.releaseReplicas, though the release scales the
// Deployment itself down; an autoscaler on the Deployment is refused while a release is under
// way, with nothing written, and the release goes on once it is gone.
func TestDeploymentTargetWithoutReplicas(t *testing.T) {
	cn := depTargetCanary()
	cn.Spec.Replicas = 0
	cn.Spec.Steps[0] = v1alpha1.CanaryStep{Replicas: intstr.FromString("50%"), Pause: &v1alpha1.CanaryPause{}}
	f := newFixture(t, cn, newStable(2))
	f.step("patch canaries checkout merge annotations", `patch deployments checkout {"spec":{"paused":true}}`, "update canaries/status checkout")
	f.status(v1alpha1.CanaryCompleted, 0)

	// Its autoscaler scales it to 4 between releases: followed, not set back.
	hpas := f.kube.AutoscalingV2().HorizontalPodAutoscalers(ns)
	if _, err := hpas.Create(context.Background(), hpa("checkout", "Deployment", "checkout"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.scaleAs("horizontal-pod-autoscaler", 100, 4)
	f.pods("checkout", 4, 4, 4)
	f.step("update canaries/status checkout")
	if st := f.canary().Status; st.Phase != v1alpha1.CanaryCompleted || st.Replicas != 4 || st.ReleaseReplicas != 0 {
		t.Fatalf("held at 4: phase %s replicas %d releaseReplicas %d: %s", st.Phase, st.Replicas, st.ReleaseReplicas, st.Message)
	}
	f.settled()

	// A new template while the autoscaler scales the Deployment: refused, nothing written.
	f.setImage("nginx:1.27")
	f.step("update canaries/status checkout")
	wantAutoscaledRelease(t, f.canary())
	f.settled()

	// The autoscaler gone, the release starts with the total of 4 recorded.
	if err := hpas.Delete(context.Background(), "checkout", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.step("create deployments checkout-canary", "update canaries/status checkout")
	if st := f.canary().Status; st.ReleaseReplicas != 4 || specOf(f.deployment("checkout-canary")) != 1 {
		t.Fatalf("release started: releaseReplicas %d canary Deployment %d, want 4 and 1", st.ReleaseReplicas, specOf(f.deployment("checkout-canary")))
	}
	if got := fmt.Sprint(f.playTotal(v1alpha1.CanaryPaused, 1)); got != "[1+4 1+3 2+3 2+2]" {
		t.Errorf("step 1 (50%% of 4): sizes %s", got)
	}
	if st := f.canary().Status; st.ReleaseReplicas != 4 || st.CanaryReplicas != 2 || st.StableReplicas != 2 {
		t.Fatalf("paused at step 1: releaseReplicas %d canary %d stable %d", st.ReleaseReplicas, st.CanaryReplicas, st.StableReplicas)
	}

	// An autoscaler on the Deployment mid-release is refused; the recorded total stays.
	if _, err := hpas.Create(context.Background(), hpa("checkout", "Deployment", "checkout"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.step("update canaries/status checkout")
	wantAutoscaledRelease(t, f.canary())
	f.settled()
	if err := hpas.Delete(context.Background(), "checkout", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Promoted: the release completes at 4 pods on the Deployment, the record cleared.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.playTotal(v1alpha1.CanaryCompleted, 1)
	d := f.deployment("checkout")
	if f.deployment("checkout-canary") != nil || specOf(d) != 4 || !d.Spec.Paused || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Fatalf("completed: canary Deployment %v, checkout %d pods paused %t of %s", f.deployment("checkout-canary") != nil,
			specOf(d), d.Spec.Paused, d.Spec.Template.Spec.Containers[0].Image)
	}
	if st := f.canary().Status; st.ReleaseReplicas != 0 || f.canary().Spec.Replicas != 0 {
		t.Errorf("completed: releaseReplicas %d spec.replicas %d, want 0 and 0", st.ReleaseReplicas, f.canary().Spec.Replicas)
	}
	for _, e := range f.events() {
		if strings.Contains(e, "Contested") {
			t.Errorf("event %q", e)
		}
	}
}

// wantAutoscaledRelease checks that cn is Degraded for the autoscaler on its Deployment target.
func wantAutoscaledRelease(t *testing.T, cn *v1alpha1.Canary) {
	t.Helper()
	cond := meta.FindStatusCondition(cn.Status.Conditions, v1alpha1.ConditionDegraded)
	if cn.Status.Phase != v1alpha1.CanaryDegraded || cond == nil || cond.Reason != v1alpha1.ReasonAutoscaledDeployment ||
		!strings.Contains(cond.Message, `HorizontalPodAutoscaler "checkout" scales Deployment "checkout", which this release scales down`) ||
		!strings.Contains(cond.Message, "kind: Canary, name: checkout) and set spec.replicas") {
		t.Fatalf("phase %s condition %+v", cn.Status.Phase, cond)
	}
}
