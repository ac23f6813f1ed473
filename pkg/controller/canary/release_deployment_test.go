package canary

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// depTargetCanary releases Deployment checkout (2 replicas) in place of a stableRef + canary:
// step 1 is one pod with a one-minute pause, step 2 all; at most one pod above replicas.
func depTargetCanary() *v1alpha1.Canary {
	return &v1alpha1.Canary{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Canary"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "checkout", Namespace: ns, UID: "canary-uid", Generation: 1, ResourceVersion: "1",
			Finalizers: []string{v1alpha1.FinalizerOrphanCanary},
		},
		Spec: v1alpha1.CanarySpec{
			Replicas:  2,
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: kindDeployment, Name: "checkout"},
			Steps: []v1alpha1.CanaryStep{
				{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: time.Minute}}},
				{Replicas: intstr.FromString("100%")},
			},
			PauseType: v1alpha1.PauseFirst,
			MaxSurge:  ptr.To(intstr.FromInt32(1)),
		},
	}
}

// pods plays kube-controller-manager for Deployment name: replicas pods, available of them
// available, updated of them on its template (a paused Deployment whose template changed runs
// none on it).
func (f *fixture) pods(name string, replicas, available, updated int32) {
	f.t.Helper()
	f.editDeployment(name, func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: updated,
			ReadyReplicas: available, AvailableReplicas: available,
		}
	})
}

// setImage changes the template of Deployment checkout, as kubectl set image does.
func (f *fixture) setImage(image string) {
	f.t.Helper()
	f.editDeployment("checkout", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = image
		d.Generation++
		d.Status.ObservedGeneration = d.Generation
		d.Status.UpdatedReplicas = 0 // paused: no ReplicaSet of the new template
	})
}

// heldTarget is a fixture whose Canary holds Deployment checkout (2 pods of nginx:1.26).
func heldTarget(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, depTargetCanary(), newStable(2))
	f.step(
		"patch canaries checkout merge annotations",
		`patch deployments checkout {"spec":{"paused":true}}`,
		"update canaries/status checkout",
	)
	f.status(v1alpha1.CanaryCompleted, 0)
	if m := f.canary().Status.Message; !strings.Contains(m, `holding Deployment "checkout" paused`) {
		t.Fatalf("message %q", m)
	}
	var snap stableSnapshot
	if err := json.Unmarshal([]byte(f.canary().Annotations[v1alpha1.AnnotationStableSnapshot]), &snap); err != nil ||
		snap.Deployment != "checkout" || snap.Template.Spec.Containers[0].Image != "nginx:1.26" {
		t.Fatalf("snapshot %+v (%v), want checkout's nginx:1.26 template", snap, err)
	}
	f.settled()
	return f
}

func TestDeploymentTargetHeldPausedBetweenReleases(t *testing.T) {
	f := heldTarget(t)
	// Resumed by hand: paused again.
	f.editDeployment("checkout", func(d *appsv1.Deployment) { d.Spec.Paused = false })
	f.step(`patch deployments checkout {"spec":{"paused":true}}`)
}

// releaseToStep1 starts a release of nginx:1.27 and makes step 1 available: the canary
// Deployment runs 1 pod, checkout 1.
func releaseToStep1(t *testing.T) *fixture {
	t.Helper()
	f := heldTarget(t)
	f.setImage("nginx:1.27")
	// One pod of room (2 + maxSurge 1): the canary Deployment is created with one pod.
	f.step("create deployments checkout-canary", "update canaries/status checkout")
	f.status(v1alpha1.CanaryProgressing, 1, v1alpha1.BatchUpgrading, v1alpha1.BatchPending)
	tmp := f.deployment("checkout-canary")
	if tmp.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" || tmp.Spec.Selector.MatchLabels[v1alpha1.LabelCanaryName] != "checkout" ||
		!isOwnedBy(tmp, f.canary()) || *tmp.Spec.Replicas != 1 {
		t.Fatalf("canary Deployment %+v", tmp.Spec)
	}
	f.pods("checkout-canary", 1, 1, 1)
	f.step(`patch deployments checkout {"spec":{"replicas":1}}`, "update canaries/status checkout")
	f.pods("checkout", 1, 1, 0)
	f.step("update canaries/status checkout")
	f.status(v1alpha1.CanaryProgressing, 1, v1alpha1.BatchBaking, v1alpha1.BatchPending)
	return f
}

func TestDeploymentTargetReleaseAndHandOver(t *testing.T) {
	f := releaseToStep1(t)
	f.clock.Step(time.Minute)
	f.step(`patch deployments checkout-canary {"spec":{"replicas":2}}`, "update canaries/status checkout")
	f.pods("checkout-canary", 2, 2, 2)
	f.step(`patch deployments checkout {"spec":{"replicas":0}}`, "update canaries/status checkout")
	// Every step complete and checkout has no pod: the new template is the stable one, and
	// checkout is resumed so that its controller makes the new template's ReplicaSet.
	f.pods("checkout", 0, 0, 0)
	f.step(
		"patch canaries checkout merge annotations",
		`patch deployments checkout {"spec":{"paused":false}}`,
		"update canaries/status checkout",
	)
	c := f.status(v1alpha1.CanaryProgressing, 2, v1alpha1.BatchCompleted, v1alpha1.BatchCompleted)
	if !strings.Contains(c.Status.Message, "handing over") {
		t.Fatalf("message %q", c.Status.Message)
	}
	// Its controller observed it: paused again and scaled up into the pod of room.
	f.pods("checkout", 0, 0, 0)
	f.step(
		`patch deployments checkout {"spec":{"paused":true}}`,
		`patch deployments checkout {"spec":{"replicas":1}}`,
		"update canaries/status checkout",
	)
	f.pods("checkout", 1, 1, 1)
	f.step(`patch deployments checkout-canary {"spec":{"replicas":1}}`, "update canaries/status checkout")
	f.pods("checkout-canary", 1, 1, 1)
	f.step(`patch deployments checkout {"spec":{"replicas":2}}`, "update canaries/status checkout")
	f.pods("checkout", 2, 2, 2)
	f.step(`patch deployments checkout-canary {"spec":{"replicas":0}}`, "update canaries/status checkout")
	f.status(v1alpha1.CanaryProgressing, 2, v1alpha1.BatchCompleted, v1alpha1.BatchCompleted)
	f.pods("checkout-canary", 0, 0, 0)
	f.step("delete deployments checkout-canary", "update canaries/status checkout")
	c = f.status(v1alpha1.CanaryCompleted, 2, v1alpha1.BatchCompleted, v1alpha1.BatchCompleted)
	if c.Status.Target == nil || c.Status.Target.StableRevision != c.Status.Target.UpdateRevision {
		t.Errorf("target %+v, want the new template stable", c.Status.Target)
	}
	f.wantEvent("Normal " + v1alpha1.EventReleaseComplete)
	f.settled()

	// The next template change is the next release, from step 1.
	f.setImage("nginx:1.28")
	f.step("create deployments checkout-canary", "update canaries/status checkout")
	f.status(v1alpha1.CanaryProgressing, 1, v1alpha1.BatchUpgrading, v1alpha1.BatchPending)
}

func TestDeploymentTargetAbortRestoresTheTemplate(t *testing.T) {
	f := releaseToStep1(t)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Rollback = true })
	// The previous template and replicas are written back in one JSON patch.
	f.step("patch deployments checkout json", "update canaries/status checkout")
	f.status(v1alpha1.CanaryRollingBack, 1, RB, v1alpha1.BatchPending)
	if img := f.deployment("checkout").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" {
		t.Fatalf("checkout runs %s, want nginx:1.26 back", img)
	}
	f.pods("checkout", 2, 2, 2)
	f.step(`patch deployments checkout-canary {"spec":{"replicas":0}}`, "update canaries/status checkout")
	f.pods("checkout-canary", 0, 0, 0)
	f.step("delete deployments checkout-canary", "update canaries/status checkout")
	c := f.canary()
	if c.Status.Phase != v1alpha1.CanaryRolledBack || c.Status.Target.AbortedRevision == "" {
		t.Fatalf("phase %s target %+v: %s", c.Status.Phase, c.Status.Target, c.Status.Message)
	}
	if !f.deployment("checkout").Spec.Paused {
		t.Error("checkout not held paused after the rollback")
	}
}

func TestDeploymentTargetNewReleaseAfterAnAbort(t *testing.T) {
	f := releaseToStep1(t)
	// A check failed: the release rolled back by itself and is over.
	f.editCanary(func(c *v1alpha1.Canary) {
		c.Status.Abort = &v1alpha1.CanaryAbort{Reason: v1alpha1.ReasonAnalysisFailed, Step: 1, Time: metav1.NewTime(start)}
	})
	f.step("patch deployments checkout json", "update canaries/status checkout")
	f.pods("checkout", 2, 2, 2)
	f.step(`patch deployments checkout-canary {"spec":{"replicas":0}}`, "update canaries/status checkout")
	f.pods("checkout-canary", 0, 0, 0)
	f.step("delete deployments checkout-canary", "update canaries/status checkout")
	if p := f.canary().Status.Phase; p != v1alpha1.CanaryRolledBack {
		t.Fatalf("phase %s", p)
	}
	f.settled()
	// The next change of the template is the next release, from step 1.
	f.setImage("nginx:1.28")
	f.step("create deployments checkout-canary", "update canaries/status checkout")
	c := f.status(v1alpha1.CanaryProgressing, 1, v1alpha1.BatchUpgrading, v1alpha1.BatchPending)
	if c.Status.Abort != nil {
		t.Errorf("abort %+v still there", c.Status.Abort)
	}
}

func TestDeploymentTargetChangeMidReleaseRestartsFromStep1(t *testing.T) {
	f := releaseToStep1(t)
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 }) // given for nginx:1.27
	f.setImage("nginx:1.28")
	// From step 1 again: the approval goes, and the canary Deployment takes the newest template
	// within the pod of room left (maxSurge 1).
	f.step(
		`patch canaries checkout [{"op":"test","path":"/spec/approvedBatch","value":1},{"op":"replace","path":"/spec/approvedBatch","value":0}]`,
		"update deployments checkout-canary",
		"update canaries/status checkout",
	)
	c := f.status(v1alpha1.CanaryProgressing, 1, v1alpha1.BatchUpgrading, v1alpha1.BatchPending)
	if c.Spec.ApprovedBatch != 0 {
		t.Errorf("approvedBatch %d, want 0 for the new release", c.Spec.ApprovedBatch)
	}
	if img := f.deployment("checkout-canary").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
		t.Errorf("canary Deployment runs %s, want nginx:1.28", img)
	}
	if c.Status.Target.UpdateRevision != templateRevision(&f.deployment("checkout").Spec.Template) {
		t.Errorf("target %+v does not name the newest template", c.Status.Target)
	}
}

// Deleted between releases, the Canary resumes the Deployment: it rolls its template by
// itself again.
func TestDeploymentTargetDeletedBetweenReleases(t *testing.T) {
	f := heldTarget(t)
	f.editCanary(deleting)
	f.step(`patch deployments checkout {"spec":{"paused":false}}`, removeFinalizer)
	if f.deployment("checkout").Spec.Paused {
		t.Error("checkout still paused after its Canary was deleted")
	}
}

// Deleted mid-release, the Canary leaves the Deployment paused (resumed, it would roll the new
// template without steps) and the canary Deployment serving, and says so.
func TestDeploymentTargetDeletedMidRelease(t *testing.T) {
	f := releaseToStep1(t)
	f.events()
	f.editCanary(deleting)
	f.step(orphanCanary, removeFinalizer)
	if !f.deployment("checkout").Spec.Paused || *f.deployment("checkout-canary").Spec.Replicas != 1 {
		t.Error("checkout resumed, or its canary Deployment changed, by the deletion mid-release")
	}
	f.wantEvent("Warning " + v1alpha1.EventTargetPaused + " Canary deleted mid-release")
}

// spec.replicas removed in the middle of a release leaves the release the total it recorded,
// not the Deployment's replicas, which the release scaled down: nothing moves.
func TestDeploymentTargetKeepsItsTotalWhenSpecReplicasGoes(t *testing.T) {
	f := releaseToStep1(t)
	if got := f.canary().Status.ReleaseReplicas; got != 2 {
		t.Fatalf("status.releaseReplicas %d at step 1, want 2", got)
	}
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.Replicas = 0 })
	f.step("update canaries/status checkout") // observedGeneration: no Deployment is written
	f.settled()
	if st := f.canary().Status; st.ReleaseReplicas != 2 || specOf(f.deployment("checkout")) != 1 || specOf(f.deployment("checkout-canary")) != 1 {
		t.Fatalf("releaseReplicas %d, checkout %d, canary %d: want 2, 1, 1", st.ReleaseReplicas, specOf(f.deployment("checkout")), specOf(f.deployment("checkout-canary")))
	}
}
