package tapp

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

// StatusQueueName names the queue of the syncs that only write a status, in logs and metrics.
const StatusQueueName = ControllerName + "-status"

// The status queue (docs/tapp.md, "Status lag"; docs/architecture.md, "Two client budgets and the
// TApp's status queue"). Pod events and the TApps' status-only updates go to a queue of their
// own, whose workers sync a TApp only as far as its status: they write the status the plan gives
// (through the status client's budget) and, when the plan has pods or gates to write too, hand
// the key to the main queue, whose sync does everything as before. So a pod turning Ready is
// answered by a status write at once instead of after every TApp queued before it, each of which
// may wait for the pod client's rate limiter; and the status written is the sync's own
// (computeStatus), not a second derivation of it.

// syncStatus is the status queue's sync: the TApp's status, and the key handed to the main queue
// when its sync has more to write. Each outcome is counted
// (workload_agent_status_sync_total), so that a status that lags can be told apart by cause.
func (c *Controller) syncStatus(ctx context.Context, name cache.ObjectName) error {
	outcome, handover, err := c.statusSync(ctx, name)
	// A new generation needs no handover: the event that brought it queued the TApp on the
	// main queue (a new TApp) or the spec queue already, and adding it again would only sync it
	// twice (once more at the end of the main queue, were its sync running).
	if handover != handoverNone && handover != handoverGeneration {
		c.Queue.Add(name)
	}
	if err != nil {
		outcome = "failed"
	}
	metrics.ObserveStatusSync(StatusQueueName, outcome, handover)
	return err
}

// What a status sync hands to the main queue, in workload_agent_status_sync_total.
const (
	handoverNone     = "none"
	handoverPods     = "pods"     // pods to create, delete or update in place
	handoverGates    = "gates"    // readiness gates to open, stuck pods to force-delete
	handoverRevision = "revision" // a revision to record
	// a new generation the status does not say it acted on, left to the main or spec queue that
	// holds it already (not added again)
	handoverGeneration = "generation"
	handoverOther      = "other" // a deleted TApp, templates to prune, a selector to report
)

// statusSync writes the TApp's status from the current observation, and says what the main
// sync has left to write. The status is written whenever it is true of what is observed: also
// when pods or gates are left to the main sync (their status says what the pods are now; the
// main sync writes the next one), but not when a new generation or a revision waits for the main
// sync, whose status only can say it acted on them; a ReplicaFailure the main sync reported stays
// until a main sync clears it.
func (c *Controller) statusSync(ctx context.Context, name cache.ObjectName) (outcome, handover string, err error) {
	seq := c.order.observe()
	namespace, tappName := name.Parts()
	t, err := c.tappLister.TApps(namespace).Get(tappName)
	if err != nil || t.DeletionTimestamp != nil || t.Spec.AutoDeleteUnusedTemplate || validateSelector(t) != nil {
		return "unchanged", handoverOther, nil
	}
	if t.Status.ObservedGeneration != t.Generation {
		return "unchanged", handoverGeneration, nil
	}
	now := c.clock.Now()
	needsSync, pods, templates, err := c.observe(t, name.String())
	if err != nil {
		return "", handoverNone, err
	}
	p := computePlan(t, templates, pods, now, c.writes.inFlight)
	rev, recorded := c.recordedRevisions(t)
	if !recorded {
		return "unchanged", handoverRevision, nil
	}
	handover = p.handover(needsSync)
	status, held := computeStatus(t, templates, pods, now, p.failure(needsSync))
	setRevisionStatus(&status, t, rev, held)
	if handover != handoverNone {
		keepFailure(&status, t)
	}
	metrics.SetRolloutProgress(Kind, namespace, tappName, int32(wantedInstances(t)), status.UpdatedReplicas, status.ReadyReplicas)
	var wrote bool
	ran, _, err := c.order.write(name.String(), seq, false, func() error {
		wrote, err = c.updateStatus(ctx, t, status)
		return err
	})
	if err != nil {
		return "", handover, err
	}
	if !ran {
		// A later observation's status was written meanwhile (another status sync cannot run
		// at once; a main sync took its number later and finished first).
		return "skipped", handover, nil
	}
	if handover == handoverNone && p.requeueAfter > 0 {
		c.Queue.AddAfter(name, p.requeueAfter)
	}
	return wroteOutcome(wrote), handover, nil
}

// keepFailure carries the ReplicaFailure condition of t's status (a write the main sync saw
// refused) into status when status has none: only the main sync, which retries the write, can
// tell that it went through.
func keepFailure(status *appsv1alpha1.TAppStatus, t *appsv1alpha1.TApp) {
	if meta.FindStatusCondition(status.Conditions, appsv1alpha1.ConditionReplicaFailure) != nil {
		return
	}
	if c := meta.FindStatusCondition(t.Status.Conditions, appsv1alpha1.ConditionReplicaFailure); c != nil {
		meta.SetStatusCondition(&status.Conditions, *c.DeepCopy())
	}
}

func wroteOutcome(wrote bool) string {
	if wrote {
		return "wrote"
	}
	return "unchanged"
}

// handover is what manage would write for the plan (needsSync: whether it may create, delete and
// update pods), as a handover reason; handoverNone when nothing.
func (p *plan) handover(needsSync bool) string {
	switch {
	case len(p.stuck) > 0 || len(p.markReady) > 0:
		return handoverGates
	case needsSync && (len(p.creates) > 0 || len(p.deletes) > 0 || len(p.inPlace) > 0):
		return handoverPods
	}
	return handoverNone
}

// failure is the ReplicaFailure of a plan that writes nothing: its problems, reported by manage
// only when it may act.
func (p *plan) failure(needsSync bool) *failure {
	if !needsSync || len(p.problems) == 0 {
		return nil
	}
	return &failure{reason: appsv1alpha1.ReasonTemplateNotFound, message: strings.Join(p.problems, "; ")}
}

// recordedRevisions is syncRevisions' result when recording the history would write nothing (the
// updated revision exists, numbered as the newest, and none is beyond the limit); false otherwise.
func (c *Controller) recordedRevisions(t *appsv1alpha1.TApp) (revisionResult, bool) {
	revisions, err := revision.ListOwned(c.revisionLister, t, labels.SelectorFromSet(revisionLabels(t)))
	if err != nil {
		return revisionResult{}, false
	}
	rp, err := computeRevisionPlan(t, revisions)
	if err != nil || rp.step.Existing == nil || rp.step.Existing.Revision != rp.step.Number || len(rp.excess) > 0 {
		return revisionResult{}, false
	}
	return revisionResult{updated: rp.step.Existing.Name, collisionCount: rp.collisionCount}, true
}
