package tapp

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
)

// defaultRevisionHistoryLimit is spec.revisionHistoryLimit when unset (the schema defaults it;
// objects stored before the field existed have none).
const defaultRevisionHistoryLimit = 10

// revisionLabels are the labels of a TApp's ControllerRevisions: managed-by, so that the agent's
// filtered informer sees them, and the TApp's name, so that a list selects one TApp's history.
func revisionLabels(t *appsv1alpha1.TApp) map[string]string {
	return map[string]string{appsv1alpha1.LabelManagedBy: appsv1alpha1.ManagedByAgent, appsv1alpha1.LabelTAppName: t.Name}
}

// revisionPlan is what keeping a TApp's history takes: the step that makes the revision of the
// current templates the updated one, and the old revisions beyond revisionHistoryLimit.
type revisionPlan struct {
	step           revision.Step
	collisionCount int32
	excess         []*appsv1.ControllerRevision
}

// computeRevisionPlan decides, from the TApp and its revisions, how its templates are recorded.
// It never plans to delete the current or the updated revision.
func computeRevisionPlan(t *appsv1alpha1.TApp, revisions []*appsv1.ControllerRevision) (revisionPlan, error) {
	var rp revisionPlan
	if t.Status.CollisionCount != nil {
		rp.collisionCount = *t.Status.CollisionCount
	}
	// A revision holds the templates an instance can run (which instance runs which template
	// is not part of it).
	data, err := revisiondata.EncodeTApp(&t.Spec)
	if err != nil {
		return rp, err
	}
	sorted := append([]*appsv1.ControllerRevision(nil), revisions...)
	revision.Sort(sorted)
	candidate := revision.New(t, controllerKind, revisionLabels(t), data, revision.Next(sorted), &rp.collisionCount)
	rp.step = revision.PlanUpdate(sorted, candidate)
	updated := candidate.Name
	if rp.step.Existing != nil {
		updated = rp.step.Existing.Name
	}
	limit := defaultRevisionHistoryLimit
	if t.Spec.RevisionHistoryLimit != nil {
		limit = int(*t.Spec.RevisionHistoryLimit)
	}
	rp.excess = revision.Excess(sorted, sets.New(t.Status.CurrentRevision, t.Status.UpdateRevision, updated), limit)
	return rp, nil
}

// revisionResult is what recording the history produced, for the status.
type revisionResult struct {
	// updated is the updated revision's name; empty when it could not be recorded.
	updated        string
	collisionCount int32
	err            error
}

// syncRevisions records the TApp's current templates as its updated revision and deletes the
// revisions beyond revisionHistoryLimit.
func (c *Controller) syncRevisions(ctx context.Context, t *appsv1alpha1.TApp) revisionResult {
	revisions, err := revision.ListOwned(c.revisionLister, t, labels.SelectorFromSet(revisionLabels(t)))
	if err != nil {
		return revisionResult{err: err}
	}
	rp, err := computeRevisionPlan(t, revisions)
	if err != nil {
		return revisionResult{collisionCount: rp.collisionCount, err: err}
	}
	res := revisionResult{collisionCount: rp.collisionCount}
	updated, err := c.history.Apply(ctx, t, rp.step, &res.collisionCount)
	if err != nil {
		res.err = fmt.Errorf("recording the revision of the templates: %w", err)
		return res
	}
	res.updated = updated.Name
	for _, r := range rp.excess {
		if err := c.history.Delete(ctx, r); err != nil {
			res.err = fmt.Errorf("deleting old revision %s: %w", r.Name, err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted old revision", "revision", r.Name)
	}
	return res
}

// setRevisionStatus fills the revision fields of a computed status: the updated revision, the
// current revision (the updated one once the rollout is complete and no instance is held on
// another by the partition, else the one before, as a StatefulSet's: a Canary that holds the
// TApp at its partition tells a release from it) and the collision count.
func setRevisionStatus(st *appsv1alpha1.TAppStatus, t *appsv1alpha1.TApp, res revisionResult, held bool) {
	st.CurrentRevision, st.UpdateRevision = t.Status.CurrentRevision, t.Status.UpdateRevision
	if res.updated != "" {
		st.UpdateRevision = res.updated
		if st.CurrentRevision == "" || (rolloutComplete(st) && !held) {
			st.CurrentRevision = res.updated
		}
	}
	if res.collisionCount != 0 || t.Status.CollisionCount != nil {
		st.CollisionCount = &res.collisionCount
	}
}

// rolloutComplete reports whether the status says every wanted instance is updated and
// available.
func rolloutComplete(st *appsv1alpha1.TAppStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == appsv1alpha1.ConditionProgressing {
			return c.Reason == appsv1alpha1.ReasonRolloutComplete
		}
	}
	return false
}
