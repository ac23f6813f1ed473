package uniteddeployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/fleet"
)

// Owner references cannot cross clusters, so a member's garbage collector would never delete
// the subset workloads a UnitedDeployment put there. FinalizerMemberWorkloads holds the
// UnitedDeployment while any of its subsets names a member (or its status still records one),
// and its deletion waits until the agent has deleted those workloads
// (docs/architecture.md, "Fleet: member clusters").

// needsFinalizer reports whether ud puts (or put) workloads in member clusters. An agent
// without a provider file writes to no member, so holds nothing either.
func (c *Controller) needsFinalizer(ud *appsv1alpha1.UnitedDeployment) bool {
	return c.fleet.HasAccess() && len(clusterRefs(ud)) > 0
}

// syncFinalizer adds the finalizer to a live ud that needs it and removes it from one that no
// longer does. It reports whether it wrote: the write's event brings ud back.
func (c *Controller) syncFinalizer(ctx context.Context, ud *appsv1alpha1.UnitedDeployment) (bool, error) {
	has := slices.Contains(ud.Finalizers, appsv1alpha1.FinalizerMemberWorkloads)
	switch need := c.needsFinalizer(ud); {
	case need && !has:
		return true, c.patchFinalizers(ctx, ud, append(slices.Clone(ud.Finalizers), appsv1alpha1.FinalizerMemberWorkloads))
	case !need && has:
		return true, c.removeFinalizer(ctx, ud)
	}
	return false, nil
}

func (c *Controller) removeFinalizer(ctx context.Context, ud *appsv1alpha1.UnitedDeployment) error {
	kept := slices.DeleteFunc(slices.Clone(ud.Finalizers), func(f string) bool { return f == appsv1alpha1.FinalizerMemberWorkloads })
	return c.patchFinalizers(ctx, ud, kept)
}

// patchFinalizers sets ud's finalizers with a JSON patch that tests the resourceVersion they
// were read at, so that another writer's finalizer is never lost.
func (c *Controller) patchFinalizers(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": ud.ResourceVersion},
		{"op": "replace", "path": "/metadata/finalizers", "value": finalizers},
	})
	if err != nil {
		return err
	}
	_, err = c.client.AppsV1alpha1().UnitedDeployments(ud.Namespace).Patch(ctx, ud.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

// finalize deletes a deleted ud's workloads in every member it names, and lets it go (removes
// the finalizer) once none is left. A member that cannot be reached holds it, and the sync is
// retried; a member whose ClusterProfile is gone has left the fleet: its workloads are left
// there, with a Warning Event.
func (c *Controller) finalize(ctx context.Context, ud *appsv1alpha1.UnitedDeployment) error {
	if !slices.Contains(ud.Finalizers, appsv1alpha1.FinalizerMemberWorkloads) {
		return nil
	}
	if !c.fleet.HasAccess() {
		c.Recorder.Event(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete,
			"the agent runs without --clusterprofile-provider-file: the subset workloads in member clusters, if any, are left there")
		return c.removeFinalizer(ctx, ud)
	}
	var left []string
	for _, ref := range clusterRefs(ud) {
		if why := c.clearMember(ctx, ud, ref); why != "" {
			left = append(left, why)
		}
	}
	if len(left) > 0 {
		return errors.New("deleted UnitedDeployment held until its member workloads are gone: " + strings.Join(left, "; "))
	}
	klog.FromContext(ctx).V(2).Info("Member workloads deleted; letting the UnitedDeployment go")
	return c.removeFinalizer(ctx, ud)
}

// clearMember deletes ud's workloads in one member; it returns why some may be left there
// ("" when none is).
func (c *Controller) clearMember(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, ref appsv1alpha1.ClusterProfileReference) string {
	key := fleet.Key(ref)
	if c.fleet != nil && c.fleet.Profile(ref) == nil {
		c.Recorder.Eventf(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete,
			"ClusterProfile %s is gone: the subset workloads in that cluster, if any, are left there", key)
		return ""
	}
	ms := c.observeMember(ud, ref)
	if ms.reason == appsv1alpha1.ReasonClusterUnreachable {
		return ms.message
	}
	if ms.waiting {
		return fmt.Sprintf("cluster %s: its caches are not synced yet", key)
	}
	listed := 0
	for _, k := range ms.kinds {
		list, err := k.List(ud)
		if err != nil {
			return fmt.Sprintf("cluster %s: %v", key, err)
		}
		for _, s := range list {
			listed++
			if err := k.Delete(ctx, s); err != nil {
				return fmt.Sprintf("deleting %s %s: %v", k.Kind(), s.Object.GetName(), err)
			}
			c.Recorder.Eventf(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulDelete, "Deleted %s %s in cluster %s: the UnitedDeployment is being deleted", k.Kind(), s.Object.GetName(), key)
		}
	}
	if listed > 0 {
		return fmt.Sprintf("cluster %s: %d workloads deleted, waiting for the deletions to show", key, listed)
	}
	return ""
}
