package canary

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// A DaemonSet has no partition: a Canary holds it with updateStrategy OnDelete, under which a
// new pod template updates no pod, and releases a step by deleting old pods itself, which the
// DaemonSet controller recreates from the new template on the same node. The step's partition
// (the pods kept on the stable revision) is an annotation of the DaemonSet, so that an agent
// started again knows it; the DaemonSet's own maxUnavailable (as it was before the hold, kept in
// another annotation) bounds how many of its pods are unavailable while the agent deletes them.
//
// A DaemonSet's status has no revisions: the update revision is the ControllerRevision that
// records its template (whose hash the DaemonSet controller puts on new pods, label
// controller-revision-hash), the current one the oldest revision a pod still runs. Its revision data is, as a StatefulSet's, the
// strategic merge patch of spec.template that kubectl rollout undo applies.

const (
	kindDaemonSet = "DaemonSet"
	// daemonSetReadTimeout bounds the reads of a sync's revisions and pods within its context.
	daemonSetReadTimeout = 30 * time.Second
)

// watchDaemonSets makes the controller release DaemonSets, each watched by name as the
// StatefulSets are: the agent caches no DaemonSet that no Canary targets.
func (c *Controller) watchDaemonSets(kube kubeclient.Interface) {
	w := newNamedWatches(kube, &appsv1.DaemonSet{}, func(namespace string) listWatchFuncs {
		d := kube.AppsV1().DaemonSets(namespace)
		return listWatchFuncs{
			list:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return d.List(ctx, o) },
			watch: d.Watch,
		}
	})
	w.setHandler(c.targetHandler(kindDaemonSet))
	c.setTargetKind(kindDaemonSet, daemonSetKind{kube: kube, watches: w, clock: c.clock})
}

// daemonSetKind is the DaemonSet targetKind: the named watches of the targeted DaemonSets, and
// the API server for their ControllerRevisions and pods.
type daemonSetKind struct {
	kube    kubeclient.Interface
	watches *namedWatches
	clock   clock.PassiveClock // the controller's: a pod's availability is judged at its now
}

func (k daemonSetKind) get(ctx context.Context, namespace, name string) (targetWorkload, error) {
	obj, ok := k.watches.get(namespace, name)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, daemonSetReadTimeout)
	defer cancel()
	return readDaemonSet(ctx, k.kube, obj.(*appsv1.DaemonSet), k.clock.Now())
}

func (k daemonSetKind) reference(canary cache.ObjectName, name string) bool {
	if name == "" {
		return k.watches.reference(canary)
	}
	return k.watches.reference(canary, name)
}

func (k daemonSetKind) forget(canary cache.ObjectName) { k.watches.release(canary) }

func (k daemonSetKind) run(ctx context.Context) { k.watches.run(ctx) }

// daemonSetRevision is one ControllerRevision of a DaemonSet.
type daemonSetRevision struct {
	name     string
	revision int64
}

// daemonSetTarget is a targeted DaemonSet as one sync read it, with its revisions and, while
// some of its pods are not on the update revision, its pods.
type daemonSetTarget struct {
	*appsv1.DaemonSet
	update    string                       // the update revision's hash
	revisions map[string]daemonSetRevision // by hash
	pods      []*corev1.Pod                // nil when every pod runs the update revision
	now       time.Time
}

// readDaemonSet reads the ControllerRevisions of ds and, while not every pod runs the update
// revision, its pods. Both are read from the API server with a label selector, not cached: the
// agent must not hold every pod or revision of the cluster to release a few DaemonSets. A sync
// costs one list of the DaemonSet's revisions (a handful, kept by revisionHistoryLimit) and,
// during a release only, one list of its pods (one per node); since Kubernetes 1.31 the API
// server serves such consistent lists from its watch cache. The pods must be current: the agent
// deletes some of them from this list.
func readDaemonSet(ctx context.Context, kube kubeclient.Interface, ds *appsv1.DaemonSet, now time.Time) (*daemonSetTarget, error) {
	t := &daemonSetTarget{DaemonSet: ds, revisions: map[string]daemonSetRevision{}, now: now}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("DaemonSet %q has an invalid selector: %w", ds.Name, err)
	}
	opts := metav1.ListOptions{LabelSelector: sel.String()}
	revs, err := kube.AppsV1().ControllerRevisions(ds.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing the ControllerRevisions of DaemonSet %q: %w", ds.Name, err)
	}
	for i := range revs.Items {
		rev := &revs.Items[i]
		hash := rev.Labels[appsv1.ControllerRevisionHashLabelKey]
		if !metav1.IsControlledBy(rev, ds) || hash == "" {
			continue
		}
		t.revisions[hash] = daemonSetRevision{name: rev.Name, revision: rev.Revision}
		// The update revision is the one that records the DaemonSet's template as read, not the
		// newest listed: the watch of the DaemonSet may lag the list, and a newer revision taken
		// for its own would be a release of a template not seen yet. The DaemonSet controller
		// matches its revisions the same way.
		if revisiondata.RecordsPodTemplate(rev.Data.Raw, &ds.Spec.Template) {
			t.update = hash
		}
	}
	if t.update == "" || ds.Status.UpdatedNumberScheduled >= ds.Status.DesiredNumberScheduled {
		return t, nil
	}
	pods, err := kube.CoreV1().Pods(ds.Namespace).List(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("listing the pods of DaemonSet %q: %w", ds.Name, err)
	}
	t.pods = []*corev1.Pod{}
	for i := range pods.Items {
		if p := &pods.Items[i]; metav1.IsControlledBy(p, ds) {
			t.pods = append(t.pods, p)
		}
	}
	return t, nil
}

func (t *daemonSetTarget) state() targetState {
	s := t.DaemonSet
	return targetState{
		// Its ControllerRevisions are written before its status: observed, they are current.
		observed:        s.Status.ObservedGeneration >= s.Generation && t.update != "",
		replicas:        s.Status.DesiredNumberScheduled,
		updated:         s.Status.UpdatedNumberScheduled,
		available:       s.Status.NumberAvailable,
		ready:           s.Status.NumberReady,
		updateRevision:  t.revisionName(t.update),
		currentRevision: t.revisionName(t.currentHash()),
		held:            t.held(),
	}
}

// revisionName is the name of the ControllerRevision of hash (the name the DaemonSet controller
// gives it, when the revision is gone).
func (t *daemonSetTarget) revisionName(hash string) string {
	if hash == "" {
		return ""
	}
	if r, ok := t.revisions[hash]; ok {
		return r.name
	}
	return t.Name + "-" + hash
}

// currentHash is the hash of the oldest revision a live pod runs: the revision the release
// started from (its stable one), as a StatefulSet's currentRevision is; the update revision's
// once every pod runs it.
func (t *daemonSetTarget) currentHash() string {
	current, oldest := t.update, int64(-1)
	for _, p := range t.pods {
		hash := p.Labels[appsv1.ControllerRevisionHashLabelKey]
		if p.DeletionTimestamp != nil || hash == t.update {
			continue
		}
		n := t.revisions[hash].revision // 0: a revision gone from the history, older than any kept
		if oldest < 0 || n < oldest {
			current, oldest = hash, n
		}
	}
	return current
}

// held is the number of pods the agent keeps on the stable revision: the annotation's, while the
// DaemonSet has updateStrategy OnDelete; 0 otherwise (a RollingUpdate DaemonSet holds nothing).
func (t *daemonSetTarget) held() int32 {
	if !t.isHeld() {
		return 0
	}
	n, err := strconv.ParseInt(t.Annotations[v1alpha1.AnnotationDaemonSetPartition], 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// isHeld says the agent holds the DaemonSet: updateStrategy OnDelete with its partition.
func (t *daemonSetTarget) isHeld() bool {
	_, ok := t.Annotations[v1alpha1.AnnotationDaemonSetPartition]
	return ok && t.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType
}

// available says whether a pod counts as available, as the DaemonSet controller counts it: not
// terminating, Ready for at least the DaemonSet's minReadySeconds.
func (t *daemonSetTarget) available(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready := time.Duration(t.Spec.MinReadySeconds) * time.Second
			return c.Status == corev1.ConditionTrue && !c.LastTransitionTime.Add(ready).After(t.now)
		}
	}
	return false
}

// unsupported is "": a DaemonSet of either updateStrategy can be held (with OnDelete).
func (t *daemonSetTarget) unsupported() string { return "" }

func (t *daemonSetTarget) write(ctx context.Context, c *Controller, _ *v1alpha1.Canary, w targetWrite) (string, error) {
	ds := t.DaemonSet
	if w.kind == setPartition {
		return t.hold(ctx, c, w.partition)
	}
	rev, err := c.ownedRevision(ctx, ds, kindDaemonSet, w.revision)
	if err != nil {
		return "", fmt.Errorf("writing the template of revision %s back to DaemonSet %q: %w", w.revision, ds.Name, err)
	}
	patch, err := revisiondata.NativeRestorePatch(rev.Data.Raw)
	if err != nil {
		return "", fmt.Errorf("writing the template of revision %s back to DaemonSet %q: ControllerRevision %q: %w", w.revision, ds.Name, rev.Name, err)
	}
	if _, err := c.kubeClient.AppsV1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("writing the template of revision %s back to DaemonSet %q: %w", w.revision, ds.Name, err)
	}
	return fmt.Sprintf("wrote the template of revision %s back to DaemonSet %q (%s); the agent deletes the pods of other revisions within its maxUnavailable", w.revision, ds.Name, w.reason), nil
}

// hold sets the partition annotation and updateStrategy OnDelete, keeping the strategy the
// DaemonSet had (the first time) for when the Canary lets it go.
func (t *daemonSetTarget) hold(ctx context.Context, c *Controller, partition int32) (string, error) {
	ds := t.DaemonSet
	annotations := map[string]string{v1alpha1.AnnotationDaemonSetPartition: strconv.Itoa(int(partition))}
	if _, ok := ds.Annotations[v1alpha1.AnnotationDaemonSetUpdateStrategy]; !ok {
		orig, err := json.Marshal(ds.Spec.UpdateStrategy)
		if err != nil {
			return "", err
		}
		annotations[v1alpha1.AnnotationDaemonSetUpdateStrategy] = string(orig)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": annotations},
		"spec":     map[string]any{"updateStrategy": map[string]any{"type": appsv1.OnDeleteDaemonSetStrategyType, "rollingUpdate": nil}},
	})
	if err != nil {
		return "", err
	}
	if _, err := c.kubeClient.AppsV1().DaemonSets(ds.Namespace).Patch(ctx, ds.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("holding DaemonSet %q (updateStrategy OnDelete, %d pods kept on the stable revision): %w", ds.Name, partition, err)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		return fmt.Sprintf("holding DaemonSet %q: updateStrategy %s → OnDelete, %d pods kept on the stable revision", ds.Name, ds.Spec.UpdateStrategy.Type, partition), nil
	}
	return fmt.Sprintf("set the pods DaemonSet %q keeps on the stable revision from %d to %d", ds.Name, t.held(), partition), nil
}

// maxUnavailable is how many of the DaemonSet's pods may be unavailable at once while the agent
// deletes them: its rollingUpdate.maxUnavailable before the hold (a percentage of the pods it
// schedules, rounded up, as the DaemonSet controller counts it), at least 1 (a DaemonSet that
// surges instead has maxUnavailable 0: the agent cannot surge a node's pod).
func (t *daemonSetTarget) maxUnavailable() int32 {
	strategy := t.Spec.UpdateStrategy
	if s, ok := t.Annotations[v1alpha1.AnnotationDaemonSetUpdateStrategy]; ok {
		strategy = appsv1.DaemonSetUpdateStrategy{}
		_ = json.Unmarshal([]byte(s), &strategy) // unreadable: the default below
	}
	mu := intstr.FromInt32(1)
	if ru := strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		mu = *ru.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&mu, int(t.Status.DesiredNumberScheduled), true)
	if err != nil || n < 1 {
		return 1
	}
	return int32(n)
}

// deletions returns the pods to delete so that at most keep pods are off the update revision,
// within maxUnavailable: unavailable old pods first (deleting them costs no availability), then
// pods of a revision between the stable and the update one, then the stable revision's.
func (t *daemonSetTarget) deletions(keep int32) []*corev1.Pod {
	var old []*corev1.Pod
	available := int32(0)
	for _, p := range t.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if t.available(p) {
			available++
		}
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != t.update {
			old = append(old, p)
		}
	}
	excess := int32(len(old)) - keep
	if excess <= 0 || t.stale() {
		return nil
	}
	budget := t.maxUnavailable() - max(0, t.Status.DesiredNumberScheduled-available)
	current := t.currentHash()
	rank := func(p *corev1.Pod) int {
		switch {
		case !t.available(p):
			return 0
		case p.Labels[appsv1.ControllerRevisionHashLabelKey] != current:
			return 1
		}
		return 2
	}
	slices.SortFunc(old, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Name, b.Name))
	})
	var out []*corev1.Pod
	for _, p := range old {
		if excess == 0 {
			break
		}
		if rank(p) > 0 {
			if budget <= 0 {
				break
			}
			budget--
		}
		out = append(out, p)
		excess--
	}
	return out
}

// stale says a pod runs a revision newer than the update one: the DaemonSet as read lags its
// template, and pods are not deleted for a revision it no longer has (its next event comes).
func (t *daemonSetTarget) stale() bool {
	update := t.revisions[t.update].revision
	for _, p := range t.pods {
		if r, ok := t.revisions[p.Labels[appsv1.ControllerRevisionHashLabelKey]]; ok && r.revision > update {
			return true
		}
	}
	return false
}

// converge deletes the pods that keep more than keep pods off the update revision, within
// maxUnavailable; the DaemonSet controller recreates each from the update revision. Their
// events (the DaemonSet's status) bring the next sync, which deletes more once pods are
// available again. held says the DaemonSet is held (OnDelete) even if t does not show it yet.
func (t *daemonSetTarget) converge(ctx context.Context, c *Controller, keep int32, held bool) (string, error) {
	if !held && !t.isHeld() {
		return "", nil // not held: its own RollingUpdate updates its pods
	}
	var names []string
	for _, p := range t.deletions(keep) {
		uid := p.UID
		err := c.kubeClient.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return "", fmt.Errorf("deleting pod %q of DaemonSet %q (revision %s) for the update revision %s: %w",
				p.Name, t.Name, t.revisionName(p.Labels[appsv1.ControllerRevisionHashLabelKey]), t.revisionName(t.update), err)
		}
		names = append(names, p.Name)
	}
	if names == nil {
		return "", nil
	}
	return fmt.Sprintf("deleted pods %s of DaemonSet %q for the DaemonSet controller to recreate on revision %s (%d kept off it, at most %d unavailable at once)",
		strings.Join(names, ", "), t.Name, t.revisionName(t.update), keep, t.maxUnavailable()), nil
}

func (daemonSetKind) latest(ctx context.Context, c *Controller, namespace, name string) (heldWorkload, error) {
	return found(func(ds *appsv1.DaemonSet) heldWorkload { return heldDaemonSet{ds} })(
		c.kubeClient.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{}))
}

// heldDaemonSet is held by updateStrategy OnDelete, its own strategy kept in an annotation:
// written back when no release is under way, so that the DaemonSet updates its pods by itself
// again; in the middle of a release it stays OnDelete (RollingUpdate would update the rest
// without steps).
type heldDaemonSet struct{ *appsv1.DaemonSet }

func (d heldDaemonSet) held() bool {
	_, held := d.Annotations[v1alpha1.AnnotationDaemonSetUpdateStrategy]
	return held
}

func (d heldDaemonSet) midRelease() string {
	if d.Status.UpdatedNumberScheduled >= d.Status.DesiredNumberScheduled {
		return ""
	}
	return fmt.Sprintf("DaemonSet %q stays updateStrategy OnDelete (%d of %d pods on its new template); delete its old pods to finish, or kubectl rollout undo ds/%s and delete the pods of the new template to undo, then set its updateStrategy back",
		d.Name, d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled, d.Name)
}

func (d heldDaemonSet) unhold(ctx context.Context, c *Controller) (string, error) {
	orig := d.Annotations[v1alpha1.AnnotationDaemonSetUpdateStrategy]
	var strategy any = map[string]string{"type": string(appsv1.RollingUpdateDaemonSetStrategyType)}
	if json.Valid([]byte(orig)) {
		strategy = json.RawMessage(orig)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{v1alpha1.AnnotationDaemonSetPartition: nil, v1alpha1.AnnotationDaemonSetUpdateStrategy: nil}},
		"spec":     map[string]any{"updateStrategy": strategy},
	})
	if err != nil {
		return "", err
	}
	_, err = c.kubeClient.AppsV1().DaemonSets(d.Namespace).Patch(ctx, d.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return fmt.Sprintf("DaemonSet %q is no longer held (updateStrategy %s again) and updates its pods by itself", d.Name, orig), err
}

// updatePods selects its pods of the update revision: the DaemonSet controller labels each pod
// with its revision's hash (controller-revision-hash). Listed from the API server.
func (t *daemonSetTarget) updatePods() (labels.Selector, bool) {
	return revisionSelector(t.Spec.Selector, appsv1.ControllerRevisionHashLabelKey, t.update), false
}
