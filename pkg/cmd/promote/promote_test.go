package promote

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace, Generation: 3}
}

// canary is a release of 10 replicas in 4 batches, at batch `current` in the given state.
func canary(approved, current int32, state v1alpha1.BatchState, phase v1alpha1.CanaryPhase) *v1alpha1.Canary {
	c := &v1alpha1.Canary{ObjectMeta: meta("checkout")}
	c.Spec.Replicas = 10
	c.Spec.Batches = ptr.To[int32](4)
	c.Spec.PauseType = v1alpha1.PauseAll
	c.Spec.StableRef.Name = "checkout"
	c.Spec.Canary.Name = "checkout-canary"
	c.Spec.ApprovedBatch = approved
	c.Status.ObservedGeneration = 3
	c.Status.Phase = phase
	c.Status.CurrentBatch = current
	for i, size := range []int32{1, 4, 7, 10} {
		b := v1alpha1.CanaryBatchStatus{Index: int32(i + 1), CanaryReplicas: size, State: v1alpha1.BatchPending}
		switch {
		case int32(i+1) < current:
			b.State = v1alpha1.BatchCompleted
		case int32(i+1) == current:
			b.State = state
		}
		c.Status.Batches = append(c.Status.Batches, b)
	}
	return c
}

// blueGreen is a blue-green release of 10 replicas whose preview waits for a promote (step 1 of
// 3: preview, switch, scale-down).
func blueGreen() *v1alpha1.Canary {
	c := canary(0, 1, v1alpha1.BatchPaused, v1alpha1.CanaryPaused)
	c.Spec.Batches, c.Spec.PauseType = nil, ""
	c.Spec.BlueGreen = &v1alpha1.CanaryBlueGreen{ActiveService: "checkout", PreviewService: "checkout-preview"}
	c.Status.Batches = c.Status.Batches[:3]
	for i := range c.Status.Batches {
		c.Status.Batches[i].CanaryReplicas = 10
	}
	return c
}

func ud() *v1alpha1.UnitedDeployment {
	u := &v1alpha1.UnitedDeployment{ObjectMeta: meta("orders")}
	u.Spec.Replicas = ptr.To[int32](10)
	u.Spec.Template.StatefulSetTemplate = &v1alpha1.StatefulSetTemplateSpec{}
	for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
		u.Spec.Topology.Subsets = append(u.Spec.Topology.Subsets, v1alpha1.Subset{Name: z})
	}
	u.Spec.UpdateStrategy.ManualUpdate = &v1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 0}}
	return u
}

// objects: the Canary c, ud/orders, deploy/front, and ud/ledger with canary/ledger releasing it
// in place (the Canary sets its partitions step by step).
func objects(c *v1alpha1.Canary) []runtime.Object {
	deploy := &appsv1.Deployment{ObjectMeta: meta("front")}
	ledger := ud()
	ledger.Name = "ledger"
	release := &v1alpha1.Canary{ObjectMeta: meta("ledger")}
	release.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "UnitedDeployment", Name: "ledger"}
	return []runtime.Object{c, ud(), deploy, ledger, release}
}

func TestPromote(t *testing.T) {
	paused := canary(0, 1, v1alpha1.BatchPaused, v1alpha1.CanaryPaused)
	heldAtGate := canary(1, 2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused)
	heldAtGate.Spec.Paused = true
	heldMidBatch := canary(1, 2, v1alpha1.BatchUpgrading, v1alpha1.CanaryPaused)
	heldMidBatch.Spec.Paused = true
	rollingBack := canary(1, 2, v1alpha1.BatchUpgrading, v1alpha1.CanaryRollingBack)
	rollingBack.Spec.Rollback = true
	tests := []struct {
		name   string
		canary *v1alpha1.Canary
		args   []string
	}{
		{"promote-canary-first-batch", paused, []string{"canary/checkout"}},
		{"promote-canary-type-name-form", paused, []string{"canary", "checkout"}},
		{"promote-canary-second-batch", canary(1, 2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused), []string{"canary/checkout"}},
		{"promote-canary-full", canary(1, 2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused), []string{"canary/checkout", "--full"}},
		{"promote-canary-full-while-progressing", canary(0, 1, v1alpha1.BatchUpgrading, v1alpha1.CanaryProgressing), []string{"canary/checkout", "--full"}},
		{"promote-canary-held-by-pause-at-gate", heldAtGate, []string{"canary/checkout"}},
		{"promote-canary-already-approved", canary(2, 2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused), []string{"canary/checkout"}},
		{"promote-canary-full-already-approved", canary(4, 3, v1alpha1.BatchUpgrading, v1alpha1.CanaryProgressing), []string{"canary/checkout", "--full"}},
		{"promote-canary-completed", canary(3, 4, v1alpha1.BatchCompleted, v1alpha1.CanaryCompleted), []string{"canary/checkout"}},
		{"promote-canary-bluegreen-preview", blueGreen(), []string{"canary/checkout"}},
		{"promote-canary-bluegreen-full", blueGreen(), []string{"canary/checkout", "--full"}},
		{"promote-dry-run-client", paused, []string{"canary/checkout", "--dry-run=client"}},
		{"promote-canary-from-file-beside-its-deployment", paused, []string{"-f", "testdata/checkout.yaml", "--dry-run=client"}},
		{"promote-dry-run-server", paused, []string{"canary/checkout", "--dry-run=server"}},
		{"promote-ud-subset", paused, []string{"ud/orders", "--subset", "zone-a"}},
		{"promote-ud-subsets", paused, []string{"ud/orders", "--subset=zone-b", "--subset=zone-a", "--subset=zone-c"}},
		{"promote-ud-all", paused, []string{"ud/orders", "--all"}},
		{"promote-ud-already-promoted", paused, []string{"ud/orders", "--subset", "zone-c"}},
		{"promote-ud-dry-run-client", paused, []string{"ud/orders", "--all", "--dry-run=client"}},
		{"error-canary-not-paused", canary(0, 2, v1alpha1.BatchUpgrading, v1alpha1.CanaryProgressing), []string{"canary/checkout"}},
		{"error-canary-held-by-pause", heldMidBatch, []string{"canary/checkout"}},
		{"error-canary-rolling-back", rollingBack, []string{"canary/checkout", "--full"}},
		{"error-canary-with-subset", paused, []string{"canary/checkout", "--subset", "zone-a"}},
		{"error-ud-unknown-subset", paused, []string{"ud/orders", "--subset", "zone-a", "--subset", "zone-x"}},
		{"error-ud-no-subset", paused, []string{"ud/orders"}},
		{"error-ud-subset-and-all", paused, []string{"ud/orders", "--subset", "zone-a", "--all"}},
		{"error-ud-full", paused, []string{"ud/orders", "--full"}},
		{"error-ud-released-by-canary", paused, []string{"ud/ledger", "--subset", "zone-a"}},
		{"error-ud-all-released-by-canary", paused, []string{"ud/ledger", "--all", "--dry-run=server"}},
		{"error-deployment", paused, []string{"deploy/front"}},
		{"error-missing", paused, []string{"canary/nope"}},
		{"error-no-args", paused, nil},
		{"error-extra-args", paused, []string{"canary/checkout", "ud/orders"}},
		{"error-bad-dry-run", paused, []string{"canary/checkout", "--dry-run=maybe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdPromote, objects(tt.canary.DeepCopy()), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			// The fake client ignores dryRun=All, so only a client dry run can be checked here.
			if res.Code != 0 || strings.Contains(tt.name, "dry-run-client") || strings.Contains(tt.name, "already") || strings.Contains(tt.name, "completed") {
				cmdtest.AssertUnchanged(t, res, objects(tt.canary.DeepCopy()))
			}
		})
	}
}

// The stored objects really change, and only in the promoted field.
func TestPromoteStored(t *testing.T) {
	res := cmdtest.Run(t, NewCmdPromote, objects(canary(0, 1, v1alpha1.BatchPaused, v1alpha1.CanaryPaused)), "canary/checkout")
	obj := res.Stored(t, workload.Canary.Resource, "checkout")
	got, err := workload.AsCanary(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := canary(1, 1, v1alpha1.BatchPaused, v1alpha1.CanaryPaused)
	if got.Spec.ApprovedBatch != 1 || got.Spec.Paused || *got.Spec.Batches != 4 || got.Spec.Replicas != want.Spec.Replicas {
		t.Errorf("stored spec %+v", got.Spec)
	}

	res = cmdtest.Run(t, NewCmdPromote, objects(canary(0, 1, v1alpha1.BatchPaused, v1alpha1.CanaryPaused)), "ud/orders", "--subset", "zone-b")
	obj = res.Stored(t, workload.UnitedDeployment.Resource, "orders")
	u, err := workload.AsUnitedDeployment(obj)
	if err != nil {
		t.Fatal(err)
	}
	if p := u.Spec.UpdateStrategy.ManualUpdate.Partitions; p["zone-a"] != 3 || p["zone-b"] != 0 || len(p) != 3 {
		t.Errorf("stored partitions %v, want zone-b set to 0 and the others kept", p)
	}
}

// Two promotes of the same paused batch, racing: both read approvedBatch 1 with batch 2
// paused; the first one's patch lands between the second one's read and its patch. Exactly
// one batch is approved: the second patch fails its test, sends nothing more, and says so.
func TestConcurrentPromotesAdvanceOneBatch(t *testing.T) {
	for _, full := range []bool{false, true} {
		objs := objects(canary(1, 2, v1alpha1.BatchPaused, v1alpha1.CanaryPaused))
		client := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(cmdtest.Scheme(), nil, objs...)
		first := true
		client.PrependReactor("patch", "canaries", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if first {
				first = false
				// The other promote wins the race: it approves the same batch.
				stored, err := client.Tracker().Get(workload.Canary.Resource, cmdtest.Namespace, "checkout")
				if err != nil {
					t.Fatal(err)
				}
				won := stored.(*v1alpha1.Canary).DeepCopy()
				won.Spec.ApprovedBatch = 2
				if err := client.Tracker().Update(workload.Canary.Resource, won, cmdtest.Namespace); err != nil {
					t.Fatal(err)
				}
			}
			return false, nil, nil
		})
		streams, _, out, _ := genericiooptions.NewTestIOStreams()
		o := &Options{Full: full, Target: mutate.Target{Ref: workload.Ref{Kind: workload.Canary, Name: "checkout"}, Namespace: cmdtest.Namespace, Client: client}, IOStreams: streams}
		err := o.Run(t.Context())
		obj, getErr := client.Resource(workload.Canary.Resource).Namespace(cmdtest.Namespace).Get(t.Context(), "checkout", metav1.GetOptions{})
		if getErr != nil {
			t.Fatal(getErr)
		}
		approved, _, _ := workload.ApprovedBatch(obj)
		if !full {
			if err != nil {
				t.Fatalf("the losing promote failed: %v", err)
			}
			if approved != 2 {
				t.Errorf("approvedBatch %d after two promotes of batch 2, want 2", approved)
			}
			if want := "canary/checkout: batch 2 was approved meanwhile by someone else; nothing more was changed\n"; out.String() != want {
				t.Errorf("printed %q, want %q", out.String(), want)
			}
			continue
		}
		// A full promote that lost its race is an error: the state it decided on is gone.
		if err == nil || !strings.Contains(err.Error(), "changed while the command ran") {
			t.Errorf("full promote after a concurrent change: got %v, want a precondition error", err)
		}
		if approved != 2 {
			t.Errorf("approvedBatch %d, want the winner's 2 kept", approved)
		}
	}
}
