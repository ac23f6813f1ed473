package uniteddeployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// result is what a sync decided and did: with the observation, what computeStatus reads.
type result struct {
	// failures are the sync's failures in the order found; errs the errors it is retried for.
	failures []failure
	errs     []error
	// alloc is each listed subset's replicas (nil: unknown, shown as 0).
	alloc map[string]int32
	// collisionCount is the revision-name collision count to publish.
	collisionCount int32
	// current and updated are the revisions; empty when the sync stopped before them.
	current, updated string
	// subsets is the subset plan carried out; nil when the sync stopped before it.
	subsets *subsetPlan
	// provisionFailed is set when a workload create or delete failed.
	provisionFailed bool
	// notUpdated lists, per reason, the subsets whose workload does not carry the updated
	// revision after the sync.
	notUpdated map[string][]string
}

// fail records a write the API server refused: reported in SubsetFailure, retried with backoff.
func (r *result) fail(reason string, err error) {
	r.failures = append(r.failures, failure{reason, err.Error()})
	r.errs = append(r.errs, err)
}

func (r *result) hold(reason, subset string) {
	if r.notUpdated == nil {
		r.notUpdated = map[string][]string{}
	}
	r.notUpdated[reason] = append(r.notUpdated[reason], subset)
}

// planAndWrite plans (computePlan, planSubsets: pure) and makes the writes to revisions and
// subset workloads.
func (c *Controller) planAndWrite(ctx context.Context, key string, obs *observation) *result {
	p := computePlan(obs)
	r := &result{alloc: p.alloc, collisionCount: p.revision.collisionCount}
	if p.blocked != nil {
		r.failures = append(r.failures, *p.blocked)
		return r
	}
	updated, err := c.writeRevision(ctx, obs.ud, &p.revision)
	r.collisionCount = p.revision.collisionCount
	if err != nil {
		r.fail(appsv1alpha1.ReasonRevisionFailed, fmt.Errorf("revision of spec.template: %w", err))
		return r
	}
	r.updated, r.current = updated.Name, currentRevision(obs, updated.Name)
	r.subsets = planSubsets(obs, p.alloc, r.current, r.updated)
	for reason, subsets := range r.subsets.held {
		for _, s := range subsets {
			r.hold(reason, s)
		}
	}
	c.apply(ctx, key, obs.ud, r)
	return r
}

// writeRevision makes the planned revision the updated one: nothing to write when it is the
// latest, a new number for an older one, else a create (which may raise the collision count).
func (c *Controller) writeRevision(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, rp *revisionPlan) (*appsv1.ControllerRevision, error) {
	switch {
	case rp.err != nil:
		return nil, rp.err
	case rp.equal != nil && rp.latest:
		return rp.equal, nil
	case rp.equal != nil:
		return c.history.Renumber(ctx, rp.equal, rp.candidate.Revision)
	default:
		return c.history.Create(ctx, ud, rp.candidate, &rp.collisionCount)
	}
}

// apply makes the subset plan's writes: creates, updates, deletes, then old revisions. Creates
// and deletes are expected (the next sync waits for the cache to show them): the hub's counted,
// a failed one counted as observed at once so that the next sync may try again; a member's
// remembered by name once made (memberWrites).
func (c *Controller) apply(ctx context.Context, key string, ud *appsv1alpha1.UnitedDeployment, r *result) {
	p := r.subsets
	if creates, deletes := p.hubWrites(); creates+deletes > 0 {
		c.expectations.SetExpectations(key, creates, deletes)
	}
	for _, cr := range p.creates {
		c.create(ctx, key, ud, cr.kind, cr, r)
	}
	for _, u := range p.updates {
		c.update(ctx, ud, u.kind, u, r)
	}
	r.failures = append(r.failures, p.failures...)
	for _, d := range p.deletes {
		c.delete(ctx, key, ud, d, r)
	}
	for _, rev := range p.oldRevisions {
		if err := c.history.Delete(ctx, rev); err != nil {
			err = fmt.Errorf("deleting old revision %s: %w", rev.Name, err)
			r.fail(appsv1alpha1.ReasonFailedDelete, err)
			c.Recorder.Event(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete, err.Error())
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted old revision", "unitedDeployment", klog.KObj(ud), "revision", rev.Name)
	}
}

// hubWrites counts the plan's creates and deletes on the hub.
func (p *subsetPlan) hubWrites() (creates, deletes int) {
	for _, cr := range p.creates {
		if clusterOf(cr.spec.Subset) == "" {
			creates++
		}
	}
	for _, d := range p.deletes {
		if d.subset.Cluster == "" {
			deletes++
		}
	}
	return creates, deletes
}

func (c *Controller) create(ctx context.Context, key string, ud *appsv1alpha1.UnitedDeployment, k workloadKind, cr creation, r *result) {
	cluster := clusterOf(cr.spec.Subset)
	obj, err := k.Create(ctx, cr.obj)
	if err == nil && cluster != "" {
		c.memberWrites.created(key, cluster, k.Kind(), obj.GetName())
	}
	if err != nil {
		if cluster == "" {
			c.expectations.CreationObserved(key)
		}
		r.provisionFailed = true
		err = fmt.Errorf("creating %s of subset %s: %w", k.Kind(), cr.spec.Subset.Name, err)
		r.fail(appsv1alpha1.ReasonFailedCreate, err)
		// A subset without its workload does not run the updated revision either.
		r.hold(appsv1alpha1.ReasonProvisionFailed, cr.spec.Subset.Name)
		c.Recorder.Event(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedCreate, err.Error())
		return
	}
	c.Recorder.Eventf(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulCreate, "Created %s %s for subset %s with %d replicas at revision %s",
		k.Kind(), obj.GetName(), cr.spec.Subset.Name, cr.spec.Replicas, cr.spec.Revision)
}

func (c *Controller) update(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, k workloadKind, u update, r *result) {
	name, spec := u.existing.Object.GetName(), u.spec
	if err := k.Update(ctx, u.obj); err != nil {
		err = fmt.Errorf("updating %s %s of subset %s: %w", k.Kind(), name, spec.Subset.Name, err)
		r.fail(appsv1alpha1.ReasonFailedUpdate, err)
		if spec.ApplyTemplate {
			r.hold(appsv1alpha1.ReasonUpdating, spec.Subset.Name)
		}
		c.Recorder.Event(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedUpdate, err.Error())
		return
	}
	msg := fmt.Sprintf("Updated %s %s of subset %s: %d replicas, partition %d", k.Kind(), name, spec.Subset.Name, spec.Replicas, spec.Partition)
	if spec.ApplyTemplate {
		msg += ", revision " + spec.Revision
	}
	if spec.Paused {
		msg += ", paused"
	}
	c.Recorder.Event(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulUpdate, msg)
}

func (c *Controller) delete(ctx context.Context, key string, ud *appsv1alpha1.UnitedDeployment, d deletion, r *result) {
	name := d.subset.Object.GetName()
	err := d.kind.Delete(ctx, d.subset)
	if err == nil && d.subset.Cluster != "" {
		c.memberWrites.deleted(key, d.subset, d.kind.Kind())
	}
	if err != nil {
		if d.subset.Cluster == "" {
			c.expectations.DeletionObserved(key)
		}
		r.provisionFailed = true
		err = fmt.Errorf("deleting %s %s: %w", d.kind.Kind(), name, err)
		r.fail(appsv1alpha1.ReasonFailedDelete, err)
		c.Recorder.Event(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete, err.Error())
		return
	}
	c.Recorder.Eventf(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulDelete, "Deleted %s %s: %s", d.kind.Kind(), name, d.why)
}
