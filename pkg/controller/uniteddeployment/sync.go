package uniteddeployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

// memberSyncRetry is how soon a sync that found a member's caches not yet synced is retried.
const memberSyncRetry = time.Second

// syncHandler reconciles one UnitedDeployment: observe (informer caches only) → plan (pure) →
// writes (revision, subset workloads, old revisions) → status (pure) → one status write when it
// changed. It returns an error to have the key retried with backoff.
func (c *Controller) syncHandler(ctx context.Context, name base.Key) error {
	key := name.String()
	logger := klog.FromContext(ctx).WithValues("unitedDeployment", key)
	ctx = klog.NewContext(ctx, logger)
	ud, err := c.udLister.UnitedDeployments(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		// Its workloads and revisions go with it through their owner references.
		c.expectations.DeleteExpectations(key)
		c.statuses.Forget(key)
		metrics.ForgetWorkload(Kind, name.Namespace, name.Name)
		return nil
	}
	if err != nil {
		return err
	}
	if ud.DeletionTimestamp != nil {
		return c.finalize(ctx, ud)
	}
	if wrote, err := c.syncFinalizer(ctx, ud); wrote || err != nil {
		return err
	}
	if !c.expectations.SatisfiedExpectations(key) {
		// Workloads created or deleted by an earlier sync are not all in the cache yet; their
		// events will enqueue the UnitedDeployment again.
		logger.V(4).Info("Waiting for subset workloads to be observed")
		return nil
	}
	obs, err := c.observe(key, ud)
	if err != nil {
		return err
	}
	if wrote, err := c.syncRetired(ctx, obs); wrote || err != nil {
		return err
	}
	if obs.memberWaiting() {
		// A member's caches are filling; an empty member sends no event when they are done.
		c.Queue.AddAfter(name, memberSyncRetry)
	}
	r := c.planAndWrite(ctx, key, obs)
	status := computeStatus(obs, r)
	c.report(obs, r, status)
	metrics.SetRolloutProgress(Kind, ud.Namespace, ud.Name, appsv1alpha1.ReplicasOrDefault(ud.Spec.Replicas), status.UpdatedReplicas, status.ReadyReplicas)
	if err := c.writeStatus(ctx, key, obs, status); err != nil {
		r.errs = append(r.errs, fmt.Errorf("updating status: %w", err))
	}
	return errors.Join(r.errs...)
}
