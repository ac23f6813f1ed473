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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Events of a Canary's deletion.
const (
	// EventOrphaned: the canary Deployment no longer has the deleted Canary as its owner.
	EventOrphaned = "CanaryDeploymentOrphaned"
	// EventForegroundDeletion: the Canary was deleted with propagationPolicy Foreground, which
	// asks the garbage collector to delete the canary Deployment; the controller lets it.
	EventForegroundDeletion = "ForegroundDeletion"
)

// errStale marks a write refused because its precondition (a JSON patch test built from the
// cache) no longer holds: the cache lags, and the informer event that updates it is on its way.
var errStale = errors.New("the object changed since it was read")

// staleIfInvalid marks a JSON patch refused with 422 (its test failed) as errStale.
func staleIfInvalid(err error) error {
	if apierrors.IsInvalid(err) {
		return fmt.Errorf("%w: %w", errStale, err)
	}
	return err
}

// addFinalizer adds v1alpha1.FinalizerOrphanCanary to the Canary, with a merge patch carrying the
// resourceVersion read: it applies only to the Canary as this sync saw it (409 Conflict
// otherwise), so the sync can go on from that Canary, whose resourceVersion it updates. It
// reports gone when the Canary no longer exists: it was deleted before its first sync, and
// nothing is to be done.
func (c *Controller) addFinalizer(ctx context.Context, cn *v1alpha1.Canary) (gone bool, err error) {
	finalizers := append(slices.Clone(cn.Finalizers), v1alpha1.FinalizerOrphanCanary)
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": cn.ResourceVersion,
			"finalizers":      finalizers,
		},
	})
	if err != nil {
		return false, err
	}
	updated, err := c.client.AppsV1alpha1().Canaries(cn.Namespace).Patch(ctx, cn.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("adding finalizer %s: %w", v1alpha1.FinalizerOrphanCanary, err)
	}
	cn.ResourceVersion = updated.ResourceVersion
	cn.Finalizers = finalizers
	return false, nil
}

// finalize runs when the Canary has a deletionTimestamp. Unless the Canary is deleted in the
// foreground (which asks for its dependents to be deleted), it removes the Canary's owner
// reference from every Deployment that has one, leaving their replicas as they are; then it
// removes v1alpha1.FinalizerOrphanCanary. It writes no status.
func (c *Controller) finalize(ctx context.Context, cn *v1alpha1.Canary, rel release) error {
	i := slices.Index(cn.Finalizers, v1alpha1.FinalizerOrphanCanary)
	if i < 0 {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("canary", klog.KObj(cn))

	if slices.Contains(cn.Finalizers, metav1.FinalizerDeleteDependents) {
		c.eventf(cn, corev1.EventTypeWarning, EventForegroundDeletion,
			"deleted with propagationPolicy Foreground: the garbage collector deletes canary Deployment %q with its pods, as asked",
			cn.Spec.Canary.Name)
	} else if err := c.orphanDeployments(ctx, cn); err != nil {
		return err
	}
	if err := rel.releaseHold(ctx, c, cn); err != nil { // release.go
		return err
	}

	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": fmt.Sprintf("/metadata/finalizers/%d", i), "value": v1alpha1.FinalizerOrphanCanary},
		{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", i)},
	})
	if err != nil {
		return err
	}
	_, err = c.client.AppsV1alpha1().Canaries(cn.Namespace).Patch(ctx, cn.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer %s: %w", v1alpha1.FinalizerOrphanCanary, staleIfInvalid(err))
	}
	logger.V(2).Info("Removed finalizer", "finalizer", v1alpha1.FinalizerOrphanCanary)
	return nil
}

// orphanDeployments removes the Canary's owner reference from its canary Deployment and from any
// other Deployment that has one (a canary Deployment of an earlier spec.canary.name). Each is
// read from the API server, not the cache: a canary Deployment created just before the deletion
// may not be in the cache yet, and one missed here would be deleted by the garbage collector.
func (c *Controller) orphanDeployments(ctx context.Context, cn *v1alpha1.Canary) error {
	names := []string{cn.Spec.Canary.Name}
	cached, err := c.deploymentLister.Deployments(cn.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, d := range cached {
		if ownerIndex(d, cn.UID) >= 0 && !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	slices.Sort(names[1:])

	deployments := c.kubeClient.AppsV1().Deployments(cn.Namespace)
	for _, n := range names {
		if n == "" {
			continue
		}
		d, err := deployments.Get(ctx, n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading Deployment %s: %w", n, err)
		}
		j := ownerIndex(d, cn.UID)
		if j < 0 {
			continue
		}
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": fmt.Sprintf("/metadata/ownerReferences/%d/uid", j), "value": cn.UID},
			{"op": "remove", "path": fmt.Sprintf("/metadata/ownerReferences/%d", j)},
		})
		if err != nil {
			return err
		}
		if _, err := deployments.Patch(ctx, n, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("removing the owner reference of Deployment %s: %w", n, staleIfInvalid(err))
		}
		msg := fmt.Sprintf("Canary deleted: Deployment %q is no longer owned by it and keeps its %d replicas (%d available)",
			n, replicasOf(d), d.Status.AvailableReplicas)
		if s, err := c.deploymentLister.Deployments(cn.Namespace).Get(cn.Spec.StableRef.Name); err == nil && s.Name != n {
			msg += fmt.Sprintf("; stable Deployment %q keeps its %d", s.Name, replicasOf(s))
		}
		c.eventf(cn, corev1.EventTypeNormal, EventOrphaned, "%s", msg)
	}
	return nil
}

// ownerIndex is the index in d's owner references of the one to the object with the given UID,
// -1 when there is none.
func ownerIndex(d *appsv1.Deployment, uid types.UID) int {
	return slices.IndexFunc(d.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == uid })
}

// eventf sends an Event on the Canary now.
func (c *Controller) eventf(cn *v1alpha1.Canary, eventType, reason, format string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(cn, eventType, reason, format, args...)
	}
}
