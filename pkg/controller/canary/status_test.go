package canary

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
)

// The Canary's status writes go through the status client (the agent's status budget), its
// other writes through the main clients.
func TestStatusWritesGoThroughTheStatusClient(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	status := fake.NewSimpleClientset()
	var statusLog []string
	status.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		statusLog = append(statusLog, describe(a))
		// The same store as the main client's, so that the fixture's reads see the write.
		obj, err := f.client.Invokes(a, nil)
		return true, obj, err
	})
	f.ctrl.statusClient = status
	f.sync() // the release starts: finalizer, snapshot, canary Deployment, status
	if !slices.Equal(statusLog, []string{writeStatus}) {
		t.Fatalf("status client: got %q, want %q", statusLog, writeStatus)
	}
	statusLog = nil
	f.available("checkout-canary", 1)
	f.step(patchStable+replicas(9), writeStatus)
	if !slices.Equal(statusLog, []string{writeStatus}) {
		t.Errorf("status client after batch 1 paused: got %q, want %q", statusLog, writeStatus)
	}
	f.status(v1alpha1.CanaryPaused, 1, Ps, P, P, P)
}

// With a progress interval (the agent's), a status that changes only in its counts is written at
// most once per interval, and the Canary is requeued for the end of it; a change of batch state
// is written at once, whenever the last write was.
func TestProgressIsCoalesced(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	f.ctrl.progressInterval = ProgressInterval
	f.sync() // the release starts: finalizer, snapshot, canary Deployment, status
	f.settled()

	// Batch 1's pod is available: batch 1 pauses. A new batch state: written at once.
	f.available("checkout-canary", 1)
	f.step(patchStable+replicas(9), writeStatus)
	f.status(v1alpha1.CanaryPaused, 1, Ps, P, P, P)
	f.settled()

	// The stable Deployment reports its 9 pods available: counts only, within the interval.
	f.available("checkout", 9)
	f.step() // held
	if c := f.canary(); c.Status.StableAvailable == 9 {
		t.Fatalf("counts written within the interval: %+v", c.Status)
	}
	f.clock.Step(ProgressInterval / 2)
	f.step() // still held

	// Once the interval is over, the sync it was requeued for writes the counts of that moment.
	f.clock.Step(ProgressInterval / 2)
	f.step(writeStatus)
	if c := f.canary(); c.Status.StableAvailable != 9 || c.Status.StableReplicas != 9 || c.Status.CanaryAvailable != 1 {
		t.Errorf("counts: %+v", c.Status)
	}
	f.settled()

	// A promote right after: batch 2 starts, written at once although the interval runs again.
	f.editCanary(func(c *v1alpha1.Canary) { c.Spec.ApprovedBatch = 1 })
	f.step(patchCanary+replicas(4), writeStatus)
	f.status(v1alpha1.CanaryProgressing, 2, C, U, P, P)
}

func TestProgressOnly(t *testing.T) {
	base := v1alpha1.CanaryStatus{Phase: v1alpha1.CanaryProgressing, CurrentBatch: 1, CanaryAvailable: 1, Message: "batch 1/4: 1 of 3"}
	counts := base
	counts.CanaryAvailable, counts.StableAvailable, counts.Message = 2, 9, "batch 1/4: 2 of 3"
	phase := counts
	phase.Phase = v1alpha1.CanaryPaused
	batch := counts
	batch.CurrentBatch = 2
	for name, c := range map[string]struct {
		status v1alpha1.CanaryStatus
		want   bool
	}{
		"the same":         {base, false},
		"counts":           {counts, true},
		"counts and phase": {phase, false},
		"counts and batch": {batch, false},
	} {
		if got := progressOnly(&base, &c.status); got != c.want {
			t.Errorf("%s: progressOnly %t, want %t", name, got, c.want)
		}
	}
}

// A promote (a new generation) queues the Canary on the spec queue; a status write of its own,
// and its Deployments' events, on the main queue.
func TestPromoteGoesToTheSpecQueue(t *testing.T) {
	f := newFixture(t, newCanary(v1alpha1.PauseFirst), newStable(10))
	old := f.canary()
	h := f.ctrl.ObjectHandler()
	promoted := old.DeepCopy()
	promoted.Spec.ApprovedBatch = 1
	promoted.Generation++
	h.OnUpdate(old, promoted)
	if f.ctrl.Spec.Len() != 1 || f.ctrl.Queue.Len() != 0 {
		t.Errorf("promote: spec queue %d, main queue %d; want 1 and 0", f.ctrl.Spec.Len(), f.ctrl.Queue.Len())
	}
	written := old.DeepCopy()
	written.Status.Phase = v1alpha1.CanaryPaused
	h.OnUpdate(old, written)
	f.ctrl.handleDeployment(newStable(10))
	if f.ctrl.Spec.Len() != 1 || f.ctrl.Queue.Len() != 1 {
		t.Errorf("status write, Deployment event: spec queue %d, main queue %d; want 1 and 1", f.ctrl.Spec.Len(), f.ctrl.Queue.Len())
	}
}
