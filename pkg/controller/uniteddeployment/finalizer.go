package uniteddeployment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
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

// patchFinalizers sets ud's finalizers with a merge patch carrying the resourceVersion they were
// read at: the API server refuses it with a conflict (a lagging cache, retried quietly) when
// someone else changed them since, so that no other finalizer is ever lost. A
// UnitedDeployment already gone needs nothing.
func (c *Controller) patchFinalizers(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	return c.patchMetadata(ctx, ud, map[string]any{"finalizers": finalizers})
}

// patchMetadata merges fields into ud's metadata, with the resourceVersion it was read at.
func (c *Controller) patchMetadata(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, fields map[string]any) error {
	fields["resourceVersion"] = ud.ResourceVersion
	patch, err := json.Marshal(map[string]any{"metadata": fields})
	if err != nil {
		return err
	}
	_, err = c.client.AppsV1alpha1().UnitedDeployments(ud.Namespace).Patch(ctx, ud.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
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
	var left, waiting []string
	for _, ref := range clusterRefs(ud) {
		switch why, wait := c.clearMember(ctx, ud, ref); {
		case wait:
			waiting = append(waiting, why)
		case why != "":
			left = append(left, why)
		}
	}
	if len(left) > 0 {
		return errors.New("deleted UnitedDeployment held until its member workloads are gone: " + strings.Join(left, "; "))
	}
	if len(waiting) > 0 {
		// Not an error: the members' informers report the deletions, and a member whose caches
		// are still filling is looked at again shortly.
		klog.FromContext(ctx).V(2).Info("Waiting for member workloads to go", "members", waiting)
		c.Queue.AddAfter(cache.MetaObjectToName(ud), memberSyncRetry)
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Member workloads deleted; letting the UnitedDeployment go")
	return c.removeFinalizer(ctx, ud)
}

// clearMember deletes ud's workloads in one member. It says why some may be left there ("" when
// none is), and whether that is only a matter of waiting (deletions not seen yet, caches
// filling) rather than a member that cannot be reached.
func (c *Controller) clearMember(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, ref appsv1alpha1.ClusterProfileReference) (string, bool) {
	key := fleet.Key(ref)
	if c.fleet != nil && c.fleet.Profile(ref) == nil {
		c.Recorder.Eventf(ud, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete,
			"ClusterProfile %s is gone: the subset workloads in that cluster, if any, are left there", key)
		return "", false
	}
	ms := c.observeMember(ud, ref)
	if ms.reason == appsv1alpha1.ReasonClusterUnreachable {
		return ms.message, false
	}
	if ms.waiting {
		return fmt.Sprintf("cluster %s: its caches are not synced yet", key), true
	}
	listed := 0
	for _, k := range ms.kinds {
		list, err := k.List(ud)
		if err != nil {
			return fmt.Sprintf("cluster %s: %v", key, err), false
		}
		for _, s := range list {
			listed++
			if err := k.Delete(ctx, s); err != nil {
				return fmt.Sprintf("deleting %s %s: %v", k.Kind(), s.Object.GetName(), err), false
			}
			c.Recorder.Eventf(ud, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulDelete, "Deleted %s %s in cluster %s: the UnitedDeployment is being deleted", k.Kind(), s.Object.GetName(), key)
		}
	}
	if listed > 0 {
		return fmt.Sprintf("cluster %s: %d workloads deleted, waiting for the deletions to show", key, listed), true
	}
	return "", false
}
