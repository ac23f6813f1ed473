package canary

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

// errNotListed says a Deployment a Canary names is watched but not listed yet.
var errNotListed = errors.New("a Deployment the Canary names is not listed yet")

// syncHandler reconciles one Canary (docs/architecture.md, "The picture"): it chooses the
// Canary's release mode, observes the Canary and its workloads from the listers, computes the
// plan, makes its writes, then writes the status computed from the plan and the writes'
// outcome, only if it changed.
func (c *Controller) syncHandler(ctx context.Context, key cache.ObjectName) error {
	shared, err := c.canaryLister.Canaries(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.deployments.release(key)
		c.forgetTarget(key)
		c.statuses.Forget(key.String())
		c.forgetProgress(key.String())
		c.forgetEndpointWait(key.String())
		c.contests.forget(key.String())
		metrics.ForgetWorkload(Kind, key.Namespace, key.Name)
		return nil
	}
	if err != nil {
		return err
	}
	rel := releaseFor(shared)
	if !c.deployments.reference(key, rel.deploymentNames(shared)...) {
		return errNotListed // its watch just started: the Deployment's events will come
	}
	if !c.referenceTarget(key, rel.target(shared)) {
		return errNotListed
	}
	if shared.DeletionTimestamp != nil {
		return c.finalize(ctx, shared, rel)
	}
	cn, bases, last := c.lastWritten(shared)
	// The finalizer goes on before anything else, so that no canary Deployment exists for a
	// Canary that can be deleted without it.
	if !slices.Contains(cn.Finalizers, v1alpha1.FinalizerOrphanCanary) {
		if gone, err := c.addFinalizer(ctx, cn); gone || err != nil {
			return err
		}
		bases = append(bases, cn.ResourceVersion)
	}
	obs := &observed{canary: cn, analysis: c.templates.resolveAnalysis(cn), wholeSteps: c.wholeSteps}
	if err := rel.observe(ctx, c, obs); err != nil {
		return err
	}
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	obs.measured = c.measure(ctx, cn, obs.analysis, podsToMeasure(obs), now.Time)
	r := computePlan(obs, now)
	fail, writeErr := c.execute(ctx, r, &bases)
	if writeErr != nil && fail == nil {
		return writeErr // the Canary itself refused a write, or the cache lags: nothing to report
	}
	if obs.canary != cn {
		// The mode counted the sync on a copy (a total followed from the target, autoscale.go):
		// the status write carries the Canary as this sync's own writes left it (the version,
		// the snapshot annotation, an approval set back), not as it was read.
		cn.ObjectMeta, cn.Spec.ApprovedBatch = obs.canary.ObjectMeta, obs.canary.Spec.ApprovedBatch
	}
	status := computeStatus(r, fail)
	metrics.SetRolloutProgress(Kind, key.Namespace, key.Name, obs.canary.Spec.Replicas,
		status.CanaryReplicas, status.CanaryAvailable+status.StableAvailable)
	if err := c.updateStatus(ctx, cn, bases, status, last); err != nil {
		c.reportStatusRefused(ctx, cn, now, err)
		if writeErr != nil {
			return fmt.Errorf("%w; %w", writeErr, err)
		}
		return err
	}
	for _, e := range r.events {
		c.Recorder.Event(cn, e.eventType, e.reason, e.message)
	}
	if r.requeueAfter > 0 {
		c.Queue.AddAfter(key, r.requeueAfter)
	}
	return writeErr
}

// execute makes the writes of a plan in order: the Canary's own (the snapshot of the stable
// Deployment, an approval set back), the route, then the release's writes, stopping at the
// first the API server refuses, which it returns as a failure to show on the Canary. bases gets the Canary's versions it writes.
func (c *Controller) execute(ctx context.Context, r *plan, bases *[]string) (*failure, error) {
	cn := r.canary
	if r.newSnapshot != "" {
		if err := c.recordSnapshot(ctx, cn, r.newSnapshot); err != nil {
			return nil, err
		}
		*bases = append(*bases, cn.ResourceVersion)
	}
	if r.resetApproval != 0 {
		if err := c.resetApproval(ctx, cn, r.resetApproval); err != nil {
			return nil, err
		}
		*bases = append(*bases, cn.ResourceVersion)
	}
	if f, err := c.writeRoute(ctx, r.decision); f != nil || err != nil { // routes.go: traffic first
		return f, err
	}
	return r.rel.execute(ctx, c)
}

// writeDeployment makes one Deployment write, expects it (pendingWrites) and reports it.
func (c *Controller) writeDeployment(ctx context.Context, obs *observed, w deploymentWrite) error {
	d := w.object
	deployments := c.kubeClient.AppsV1().Deployments(d.Namespace)
	base := obs.canaryDep
	var out *appsv1.Deployment
	var err error
	switch w.kind {
	case createCanary:
		base = nil
		out, err = deployments.Create(ctx, d, metav1.CreateOptions{})
	case updateCanary:
		out, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	case scaleCanary:
		out, err = deployments.Patch(ctx, d.Name, types.MergePatchType, w.patch, metav1.PatchOptions{})
	case scaleStable:
		base = obs.stable
		out, err = deployments.Patch(ctx, d.Name, types.MergePatchType, w.patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerAgent})
	case restoreStable:
		base = obs.stable
		out, err = deployments.Patch(ctx, d.Name, types.JSONPatchType, w.patch, metav1.PatchOptions{FieldManager: v1alpha1.FieldManagerAgent})
	}
	if err != nil {
		return err
	}
	if w.kind == scaleStable || w.kind == restoreStable {
		c.wroteDeployment(obs, deploymentReplicas, out)
	}
	c.expectWrite(d.Namespace+"/"+d.Name, base, out)
	c.Recorder.Event(obs.canary, corev1.EventTypeNormal, w.eventReason(), w.done())
	return nil
}

// doing describes a write, for the message of its failure.
func (w deploymentWrite) doing() string {
	name := w.object.Name
	switch w.kind {
	case createCanary:
		return fmt.Sprintf("creating canary Deployment %q", name)
	case updateCanary:
		return fmt.Sprintf("updating the template of canary Deployment %q", name)
	case scaleCanary:
		return fmt.Sprintf("scaling canary Deployment %q to %d", name, w.to)
	case scaleStable:
		return fmt.Sprintf("scaling stable Deployment %q to %d", name, w.to)
	default:
		return fmt.Sprintf("restoring the pod template of stable Deployment %q", name)
	}
}

// done describes a write made, for its Event.
func (w deploymentWrite) done() string {
	name := w.object.Name
	switch w.kind {
	case createCanary:
		return fmt.Sprintf("created canary Deployment %q with %d replicas", name, w.to)
	case updateCanary:
		return fmt.Sprintf("updated the pod template of canary Deployment %q", name)
	case scaleCanary:
		return fmt.Sprintf("scaled canary Deployment %q from %d to %d", name, w.from, w.to)
	case scaleStable:
		return fmt.Sprintf("scaled stable Deployment %q from %d to %d", name, w.from, w.to)
	default:
		return fmt.Sprintf("restored the pod template of stable Deployment %q from when the release began, with %d replicas", name, w.to)
	}
}

// eventReason is the reason of a write's Event.
func (w deploymentWrite) eventReason() string {
	return [...]string{
		createCanary:  v1alpha1.EventCanaryCreated,
		updateCanary:  v1alpha1.EventCanaryUpdated,
		scaleCanary:   v1alpha1.EventScaledCanary,
		scaleStable:   v1alpha1.EventScaledStable,
		restoreStable: v1alpha1.EventRestoredStable,
	}[w.kind]
}

// recordSnapshot writes the snapshot annotation on cn with a merge patch carrying the
// resourceVersion read: it applies only to the Canary as this sync saw it. cn takes the
// patched version, which the status write must carry.
func (c *Controller) recordSnapshot(ctx context.Context, cn *v1alpha1.Canary, raw string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": cn.ResourceVersion,
			"annotations":     map[string]string{v1alpha1.AnnotationStableSnapshot: raw},
		},
	})
	if err != nil {
		return err
	}
	updated, err := c.client.AppsV1alpha1().Canaries(cn.Namespace).Patch(ctx, cn.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("recording the stable Deployment in annotation %s: %w", v1alpha1.AnnotationStableSnapshot, err)
	}
	cn.ResourceVersion = updated.ResourceVersion
	if cn.Annotations == nil {
		cn.Annotations = map[string]string{}
	}
	cn.Annotations[v1alpha1.AnnotationStableSnapshot] = raw
	return nil
}

// resetApproval sets spec.approvedBatch back to 0 as a target's new release starts, with a JSON
// patch that tests the value read: a promote made meanwhile fails the test (the sync is retried
// from the Canary as it is then). cn takes the patched version, which the status write carries.
func (c *Controller) resetApproval(ctx context.Context, cn *v1alpha1.Canary, read int32) error {
	patch := fmt.Appendf(nil, `[{"op":"test","path":"/spec/approvedBatch","value":%d},{"op":"replace","path":"/spec/approvedBatch","value":0}]`, read)
	updated, err := c.client.AppsV1alpha1().Canaries(cn.Namespace).Patch(ctx, cn.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("setting spec.approvedBatch back to 0 for the new release: %w", staleIfInvalid(err))
	}
	cn.ResourceVersion, cn.Generation = updated.ResourceVersion, updated.Generation
	cn.Spec.ApprovedBatch = 0
	return nil
}
