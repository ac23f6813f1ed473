package canary

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/partition"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/tapp"
	appsinformers "github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

// A TApp target is released through spec.updateStrategy.partition: instances with an id below it
// keep their template, as a StatefulSet's ordinals do, so a step of N instances sets it to
// replicas − N and the agent's TApp controller updates the N highest ids, within the TApp's
// maxUnavailable. Its status.currentRevision stays the revision the release started from until
// every instance runs the new one (pkg/controller/tapp). Its revisions are ControllerRevisions
// recording its template and template pool (pkg/apis/apps/revisiondata): an abort writes both
// back, as kubectl workload undo tapp/x does.
//
// TApps come from the agent's shared TApp informer, which holds every TApp (the TApp controller
// needs them all): no watch by name.

const kindTApp = "TApp"

// setTAppSource gives the controller the TApps Canaries target: a lister that holds every TApp
// (the agent's shared informer; a test's store).
func (c *Controller) setTAppSource(l appslisters.TAppLister) {
	c.setTargetKind(kindTApp, tappKind{lister: l})
}

// readTApps makes the controller release the TApps Canaries target from the shared informer
// (which the TApp controller keeps for every TApp anyway): its lister is the source and its
// events enqueue the Canaries that target them.
func (c *Controller) readTApps(tapps appsinformers.TAppInformer) error {
	if _, err := tapps.Informer().AddEventHandler(c.targetHandler(kindTApp)); err != nil {
		return fmt.Errorf("watching the TApps Canaries target: %w", err)
	}
	c.setTAppSource(tapps.Lister())
	c.WaitFor(tapps.Informer().HasSynced)
	return nil
}

// tappKind is the TApp targetKind over a lister.
type tappKind struct {
	listedKind
	lister appslisters.TAppLister
}

func (k tappKind) get(_ context.Context, namespace, name string) (targetWorkload, error) {
	return found(func(t *v1alpha1.TApp) targetWorkload { return tappTarget{t} })(k.lister.TApps(namespace).Get(name))
}

// tappTarget is a targeted TApp as one sync read it.
type tappTarget struct{ *v1alpha1.TApp }

func (t tappTarget) state() targetState {
	s := &t.Status
	return targetState{
		observed:        s.ObservedGeneration >= t.Generation,
		replicas:        v1alpha1.ReplicasOrDefault(t.Spec.Replicas),
		updated:         s.UpdatedReplicas,
		available:       s.AvailableReplicas,
		ready:           s.ReadyReplicas,
		updateRevision:  s.UpdateRevision,
		currentRevision: s.CurrentRevision,
		held:            partition.TApp(t.TApp),
	}
}

// unsupported refuses what a partition cannot release step by step: a paused TApp updates no
// instance (no step would finish); a killed instance has no pod to count, so the step's instances
// would never all be updated and available; instances on templatePool templates are not on
// spec.template's revision alone, so the updated instances would not be the step's.
func (t tappTarget) unsupported() string {
	switch killed, pooled := t.killedIDs(), t.pooledIDs(); {
	case t.Spec.UpdateStrategy.Paused:
		return fmt.Sprintf("TApp %q is paused (spec.updateStrategy.paused): no instance would be updated; resume it (kubectl workload resume tapp/%s) and pause the Canary instead (kubectl workload pause canary/…)", t.Name, t.Name)
	case len(killed) > 0:
		return fmt.Sprintf("TApp %q has killed instances (%s): the steps count every instance up to spec.replicas; start them (kubectl workload start-instance tapp/%s …) or lower its replicas", t.Name, strings.Join(killed, ", "), t.Name)
	case len(pooled) > 0:
		return fmt.Sprintf("TApp %q runs instances on templatePool templates (%s, through spec.templates or defaultTemplateName): a Canary releases spec.template to every instance; remove those assignments", t.Name, strings.Join(pooled, ", "))
	}
	return ""
}

// killedIDs lists the instances below replicas whose desired status is Killed.
func (t tappTarget) killedIDs() []string {
	return t.idsBelowReplicas(func(id string) bool { return t.Spec.Statuses[id] == v1alpha1.InstanceKilled })
}

// pooledIDs lists the instances below replicas that run a templatePool template ("all" when
// defaultTemplateName assigns one to every instance).
func (t tappTarget) pooledIDs() []string {
	if t.Spec.DefaultTemplateName != "" {
		return []string{"all, defaultTemplateName " + t.Spec.DefaultTemplateName}
	}
	return t.idsBelowReplicas(func(id string) bool { return t.Spec.Templates[id] != "" })
}

// idsBelowReplicas lists, in id order, the instance ids below replicas that spec.statuses or
// spec.templates name and match.
func (t tappTarget) idsBelowReplicas(match func(string) bool) []string {
	replicas := int(v1alpha1.ReplicasOrDefault(t.Spec.Replicas))
	var ids []int
	seen := map[string]bool{}
	for _, m := range []map[string]string{stringKeys(t.Spec.Statuses), t.Spec.Templates} {
		for id := range m {
			n, err := strconv.Atoi(id)
			if err != nil || n >= replicas || seen[id] || !match(id) {
				continue
			}
			seen[id] = true
			ids = append(ids, n)
		}
	}
	sort.Ints(ids)
	out := make([]string, len(ids))
	for i, n := range ids {
		out[i] = strconv.Itoa(n)
	}
	return out
}

func stringKeys(m map[string]v1alpha1.InstanceDesiredStatus) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func (t tappTarget) write(ctx context.Context, c *Controller, _ *v1alpha1.Canary, w targetWrite) (string, error) {
	tapp := t.TApp
	switch w.kind {
	case setPartition:
		if err := c.patchTAppPartition(ctx, tapp.Namespace, tapp.Name, w.partition); err != nil {
			return "", err
		}
		return fmt.Sprintf("set the partition of TApp %q from %d to %d", tapp.Name, partition.TApp(tapp), w.partition), nil
	default:
		if err := c.restoreTAppRevision(ctx, tapp, w.revision); err != nil {
			return "", fmt.Errorf("writing the templates of revision %s back to TApp %q: %w", w.revision, tapp.Name, err)
		}
		return fmt.Sprintf("wrote the templates of revision %s back to TApp %q (%s)", w.revision, tapp.Name, w.reason), nil
	}
}

// patchTAppPartition sets spec.updateStrategy.partition with a merge patch (a TApp is a custom
// resource: no strategic merge), leaving the rest of the update strategy as it is.
func (c *Controller) patchTAppPartition(ctx context.Context, namespace, name string, n int32) error {
	if _, err := c.client.AppsV1alpha1().TApps(namespace).Patch(ctx, name, types.MergePatchType, partition.TAppPatch(n), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting the partition of TApp %q to %d: %w", name, n, err)
	}
	return nil
}

// restoreTAppRevision writes the templates a ControllerRevision of t recorded back to t, with
// the restore patch of pkg/apis/apps/revisiondata (the template replaced whole, the pool put
// back or removed): the TApp controller then finds the revision's hash again.
func (c *Controller) restoreTAppRevision(ctx context.Context, t *v1alpha1.TApp, name string) error {
	data, err := c.revisionTemplates(ctx, t, kindTApp, name)
	if err != nil {
		return err
	}
	patch, err := data.RestorePatch(t.Spec.TemplatePool != nil)
	if err != nil {
		return err
	}
	_, err = c.client.AppsV1alpha1().TApps(t.Namespace).Patch(ctx, t.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

func (tappKind) latest(ctx context.Context, c *Controller, namespace, name string) (heldWorkload, error) {
	return found(func(t *v1alpha1.TApp) heldWorkload { return heldTApp{t} })(
		c.client.AppsV1alpha1().TApps(namespace).Get(ctx, name, metav1.GetOptions{}))
}

// heldTApp is held by its partition: set back to 0 when no release is under way, so that the
// TApp updates its instances by itself again; in the middle of a release the partition stays
// where it is (lowering it would update the rest without steps).
type heldTApp struct{ *v1alpha1.TApp }

func (t heldTApp) held() bool { return partition.TApp(t.TApp) != 0 }

func (t heldTApp) midRelease() string {
	if t.Status.UpdateRevision == t.Status.CurrentRevision {
		return ""
	}
	return fmt.Sprintf("TApp %q keeps partition %d (%d instances on revision %s); lower it to finish (kubectl workload set-partition tapp/%s 0) or undo it (kubectl workload undo tapp/%s)",
		t.Name, partition.TApp(t.TApp), t.Status.UpdatedReplicas, t.Status.UpdateRevision, t.Name, t.Name)
}

func (t heldTApp) unhold(ctx context.Context, c *Controller) (string, error) {
	err := c.patchTAppPartition(ctx, t.Namespace, t.Name, 0)
	return fmt.Sprintf("TApp %q is no longer held (partition %d → 0) and updates its instances by itself again", t.Name, partition.TApp(t.TApp)), err
}

// updatePods selects its instances made from (or updated in place to) spec.template: the TApp
// controller labels each pod with the hash of its template. TApp pods carry the managed-by label:
// the agent's pod informer holds them.
func (t tappTarget) updatePods() (labels.Selector, bool) {
	return labels.SelectorFromSet(labels.Set{
		v1alpha1.LabelTAppName:     t.Name,
		v1alpha1.LabelTemplateHash: tapp.TemplateHash(&t.Spec.Template),
	}), true
}
