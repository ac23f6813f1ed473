package tapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/slowstart"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
)

// errExists says a pod to create exists already and belongs to the TApp.
var errExists = errors.New("pod exists already")

// syncHandler reconciles one TApp, reading only from the listers. It returns an error to have the
// key retried with backoff. Run keeps it exclusive of the spec or main queue's sync of the same
// TApp; its status write is ordered with the status queue's (statusorder.go).
func (c *Controller) syncHandler(ctx context.Context, name cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("tapp", name.String())
	ctx = klog.NewContext(ctx, logger)
	key := name.String()
	namespace, tappName := name.Parts()
	seq := c.order.observe()

	t, err := c.tappLister.TApps(namespace).Get(tappName)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("TApp deleted")
		c.expectations.DeleteExpectations(key)
		c.statuses.Forget(key)
		c.order.forget(key)
		metrics.ForgetWorkload(Kind, namespace, tappName)
		return nil
	}
	if err != nil {
		return err
	}
	if t.DeletionTimestamp != nil {
		// The garbage collector deletes the pods through their owner references.
		return nil
	}
	now := c.clock.Now()

	// Whether this sync may create and delete pods is decided before the pods are read, as the
	// ReplicaSet controller does: an observation that satisfies the expectations while this sync
	// runs (e.g. during its status patches) comes with a cache change that the pod list read here
	// may not show, and a plan from that list would create or delete the same pods again. The
	// next sync, queued by that observation, reads a cache that has caught up.
	needsSync, pods, templates, err := c.observe(t, key)
	if err != nil {
		return err
	}

	var fail *failure
	var manageErr error
	var p *plan
	if fail = validateSelector(t); fail != nil {
		if !hasFailure(t, fail) {
			c.Recorder.Event(t, corev1.EventTypeWarning, fail.reason, fail.message)
		}
	} else {
		if t.Spec.AutoDeleteUnusedTemplate {
			if pruned, err := c.pruneTemplates(ctx, t, pods); err != nil || pruned {
				// The spec update brings the TApp back through the informer.
				return err
			}
		}
		p = computePlan(t, templates, pods, now, c.writes.inFlight)
		if templates.heldErr != nil {
			logger.Info("Instances below the partition made from their own template", "err", templates.heldErr)
		}
		fail, manageErr = c.manage(ctx, t, key, templates, p, needsSync)
	}

	rev := c.syncRevisions(ctx, t)
	if namespaceTerminating(rev.err) {
		// As for pods (createPods): the TApp goes with its namespace, nothing to report or retry.
		klog.FromContext(ctx).V(2).Info("The namespace is being deleted; revision not recorded", "err", rev.err)
		rev.err = nil
	}
	manageErr = errors.Join(manageErr, rev.err)
	if rev.err != nil && fail == nil {
		// A refused revision write is a failed child write like any other: a condition, not
		// only a requeue (the server's message included).
		fail = &failure{reason: appsv1alpha1.ReasonRevisionFailed, message: rev.err.Error()}
	}
	status, held := computeStatus(t, templates, pods, now, fail)
	setRevisionStatus(&status, t, rev, held)
	metrics.SetRolloutProgress(Kind, namespace, tappName, int32(wantedInstances(t)), status.UpdatedReplicas, status.ReadyReplicas)
	if err := c.writeStatusInOrder(ctx, t, status, seq, fail != nil); err != nil {
		return errors.Join(manageErr, err)
	}
	if p != nil && p.requeueAfter > 0 {
		c.Queue.AddAfter(name, p.requeueAfter)
	}
	return manageErr
}

// observe reads what a sync plans from, expectations first (see sync): whether the sync may
// create and delete pods, the TApp's pods by instance id, its templates.
func (c *Controller) observe(t *appsv1alpha1.TApp, key string) (bool, map[int]*corev1.Pod, *templateSet, error) {
	needsSync := c.expectations.SatisfiedExpectations(key)
	pods, err := c.getPods(t)
	if err != nil {
		return false, nil, nil, err
	}
	templates := newTemplateSet(t)
	templates.revisions = c.revisionLister
	return needsSync, pods, templates, nil
}

// wantedInstances is how many instances should run: replicas less the killed ones.
func wantedInstances(t *appsv1alpha1.TApp) int {
	n := desiredReplicas(t)
	for id, s := range t.Spec.Statuses {
		if s != appsv1alpha1.InstanceKilled {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(id, "%d", &i); err == nil && i >= 0 && i < desiredReplicas(t) {
			n--
		}
	}
	return n
}

// getPods returns the TApp's pods from the cache by instance id: pods labelled with the TApp's
// name, controlled by this TApp (same UID) and named after their instance id.
func (c *Controller) getPods(t *appsv1alpha1.TApp) (map[int]*corev1.Pod, error) {
	list, err := c.podLister.Pods(t.Namespace).List(labels.SelectorFromSet(labels.Set{appsv1alpha1.LabelTAppName: t.Name}))
	if err != nil {
		return nil, err
	}
	pods := make(map[int]*corev1.Pod, len(list))
	for _, pod := range list {
		ref := metav1.GetControllerOf(pod)
		if ref == nil || ref.UID != t.UID {
			continue
		}
		id, ok := instanceID(pod)
		if !ok || pod.Name != PodName(t.Name, id) {
			continue
		}
		pods[id] = pod
	}
	return pods, nil
}

// validateSelector checks that the selector is usable and matches the labels of every template.
func validateSelector(t *appsv1alpha1.TApp) *failure {
	if t.Spec.Selector == nil || (len(t.Spec.Selector.MatchLabels) == 0 && len(t.Spec.Selector.MatchExpressions) == 0) {
		return &failure{appsv1alpha1.ReasonInvalidSelector, "spec.selector is empty: it would select every pod"}
	}
	sel, err := metav1.LabelSelectorAsSelector(t.Spec.Selector)
	if err != nil {
		return &failure{appsv1alpha1.ReasonInvalidSelector, fmt.Sprintf("spec.selector is invalid: %v", err)}
	}
	if !sel.Matches(labels.Set(t.Spec.Template.Labels)) {
		return &failure{appsv1alpha1.ReasonSelectorMismatch, "spec.selector does not match the labels of spec.template; no pod is created"}
	}
	names := make([]string, 0, len(t.Spec.TemplatePool))
	for n := range t.Spec.TemplatePool {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !sel.Matches(labels.Set(t.Spec.TemplatePool[n].Labels)) {
			return &failure{appsv1alpha1.ReasonSelectorMismatch, fmt.Sprintf("spec.selector does not match the labels of templatePool[%q]; no pod is created", n)}
		}
	}
	return nil
}

// hasFailure reports whether the TApp's status already shows this failure.
func hasFailure(t *appsv1alpha1.TApp, f *failure) bool {
	for _, c := range t.Status.Conditions {
		if c.Type == appsv1alpha1.ConditionReplicaFailure {
			return c.Status == metav1.ConditionTrue && c.Reason == f.reason && c.Message == f.message
		}
	}
	return false
}

// manage carries out a plan: readiness gates and stuck pods always; creations, deletions and
// in-place updates only when needsSync, i.e. when the expectations were satisfied before the
// plan's pods were read from the cache (the cache had caught up with the previous creations and
// deletions). Deletions go before creations: while any pod is to be deleted, creations wait for
// the next sync.
func (c *Controller) manage(ctx context.Context, t *appsv1alpha1.TApp, key string, templates *templateSet, p *plan, needsSync bool) (*failure, error) {
	var fail *failure
	var errs []error
	note := func(reason string, err error) {
		if err == nil {
			return
		}
		errs = append(errs, err)
		if fail == nil {
			fail = &failure{reason: reason, message: err.Error()}
		}
	}

	note(appsv1alpha1.ReasonFailedDelete, c.forceDeleteStuck(ctx, t, p.stuck))
	note(appsv1alpha1.ReasonFailedStatusPatch, c.markReady(ctx, t, p.markReady))

	if !needsSync {
		klog.FromContext(ctx).V(4).Info("Waiting for the pod cache to observe earlier creations and deletions")
		return fail, errors.Join(errs...)
	}
	if len(p.deletes) > 0 {
		note(appsv1alpha1.ReasonFailedDelete, c.deletePods(ctx, t, key, p.deletes))
	} else if len(p.creates) > 0 {
		note(appsv1alpha1.ReasonFailedCreate, c.createPods(ctx, t, key, p.creates))
	}
	note(appsv1alpha1.ReasonFailedUpdate, c.updateInPlace(ctx, t, templates, p.inPlace))

	if fail == nil {
		fail = p.failure(true)
	}
	return fail, errors.Join(errs...)
}

// createPods creates the pods (and first their claims) of the given instances in slow-start
// batches, expecting each creation before issuing it.
func (c *Controller) createPods(ctx context.Context, t *appsv1alpha1.TApp, key string, creates []instanceToCreate) error {
	c.expectations.ExpectCreations(key, len(creates))
	res := slowstart.Run(len(creates), 1, func(i int) error {
		err := c.createInstance(ctx, t, creates[i])
		if err != nil {
			// No event will come for a pod that was not created (nor, perhaps, for one that
			// existed already: its event may have come before the expectation was raised).
			c.expectations.CreationObserved(key)
		}
		if err == errExists {
			return nil
		}
		return err
	})
	for i := res.Attempted; i < len(creates); i++ {
		c.expectations.CreationObserved(key)
	}
	if skipped := res.Skipped(len(creates)); skipped > 0 {
		klog.FromContext(ctx).V(2).Info("Slow-start creation stopped at an error", "created", res.Succeeded, "skipped", skipped)
	}
	if namespaceTerminating(res.Err) {
		// Every creation fails in a namespace being deleted, and the TApp goes with it: nothing
		// to report, nor to retry before a pod or the TApp changes (the ReplicaSet controller
		// ignores this error too).
		klog.FromContext(ctx).V(2).Info("The namespace is being deleted; pods not created", "err", res.Err)
		return nil
	}
	return res.Err
}

// namespaceTerminating reports whether err is (or aggregates) the API server's refusal to create
// an object in a namespace being deleted.
func namespaceTerminating(err error) bool {
	if err == nil {
		return false
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if namespaceTerminating(e) {
				return true
			}
		}
		return false
	}
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

func (c *Controller) createInstance(ctx context.Context, t *appsv1alpha1.TApp, in instanceToCreate) error {
	for i := range t.Spec.VolumeClaimTemplates {
		claim := newPVC(t, &t.Spec.VolumeClaimTemplates[i], in.id)
		if _, err := c.pvcLister.PersistentVolumeClaims(t.Namespace).Get(claim.Name); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		_, err := c.kubeClient.CoreV1().PersistentVolumeClaims(t.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Our cache lags or the claim outlived an earlier TApp of this name: use it.
		case err != nil:
			if !namespaceTerminating(err) {
				c.Recorder.Eventf(t, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedCreate, "Error creating claim %s for instance %d: %v", claim.Name, in.id, err)
			}
			return fmt.Errorf("creating claim %s: %w", claim.Name, err)
		default:
			c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulCreate, "Created claim %s for instance %d", claim.Name, in.id)
		}
	}
	pod := newPod(t, in.id, in.info)
	created, err := c.kubeClient.CoreV1().Pods(t.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// The name is the instance's identity, so there can never be two; but whose pod is it? A
		// pod of this TApp that the cache does not show yet (created by an earlier agent process
		// just before it died, or by this one before the cache caught up) is fine: the informer
		// will bring it. Anything else holds the name and must be reported.
		existing, getErr := c.kubeClient.CoreV1().Pods(t.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr == nil {
			if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == t.UID {
				klog.FromContext(ctx).V(2).Info("Pod exists already; the cache has not caught up", "pod", pod.Name)
				return errExists
			}
			err = fmt.Errorf("pod %s exists and is not controlled by this TApp", pod.Name)
		}
	}
	if err != nil {
		if !namespaceTerminating(err) {
			c.Recorder.Eventf(t, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedCreate, "Error creating pod %s for instance %d: %v", pod.Name, in.id, err)
		}
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulCreate, "Created pod %s for instance %d", pod.Name, in.id)
	c.openGate(ctx, created)
	return nil
}

// openGate sets the readiness gate condition of a pod just created to True. A new pod runs the
// images of its spec by definition, so there is nothing to wait for; opening the gate at once,
// while the pod is still being scheduled, spares the pod a round trip (kubelet reports not
// ready, the agent opens the gate, the kubelet reports ready) on its way to Ready. Should the
// patch fail, markReady opens the gate once the pod runs.
func (c *Controller) openGate(ctx context.Context, pod *corev1.Pod) {
	if pod == nil || pod.UID == "" || !hasReadinessGate(pod) {
		return
	}
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	_, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType,
		conditionPatch(pod.UID, corev1.ConditionTrue, reasonImagesReady, "", now, nil), metav1.PatchOptions{}, "status")
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Could not open the readiness gate of a new pod; retrying once it runs", "pod", pod.Name, "err", err)
	}
}

// deletePods deletes pods in slow-start batches. Each deletion is expected (by pod key) before it
// is issued, and the expectation is lowered again for deletions that failed or were skipped.
func (c *Controller) deletePods(ctx context.Context, t *appsv1alpha1.TApp, key string, dels []podDeletion) error {
	keys := make([]string, len(dels))
	for i, d := range dels {
		keys[i] = expectations.ObjectKey(d.pod)
	}
	c.expectations.ExpectDeletions(key, keys)
	res := slowstart.Run(len(dels), 1, func(i int) error {
		d := dels[i]
		err := c.kubeClient.CoreV1().Pods(d.pod.Namespace).Delete(ctx, d.pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &d.pod.UID},
		})
		if err != nil {
			c.expectations.DeletionObserved(key, keys[i])
			if apierrors.IsNotFound(err) {
				return nil
			}
			c.Recorder.Eventf(t, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete, "Error deleting pod %s of instance %d: %v", d.pod.Name, d.id, err)
			return fmt.Errorf("deleting pod %s: %w", d.pod.Name, err)
		}
		switch d.reason {
		case deleteKill:
			c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonKilled, "Killed instance %d: deleted pod %s", d.id, d.pod.Name)
		case deleteRecreate:
			c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonRecreate, "Deleted pod %s of instance %d to re-create it from its new template", d.pod.Name, d.id)
		case deleteRestart:
			c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulDelete, "Deleted finished pod %s of instance %d (phase %s) to start it again", d.pod.Name, d.id, d.pod.Status.Phase)
		default:
			c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonSuccessfulDelete, "Deleted pod %s of instance %d (scale down)", d.pod.Name, d.id)
		}
		return nil
	})
	for i := res.Attempted; i < len(dels); i++ {
		c.expectations.DeletionObserved(key, keys[i])
	}
	return res.Err
}

// conditionPatch is a strategic merge patch of the pod status setting the in-place readiness
// gate condition, and the hash labels of template relabel when it is set (pods/status keeps
// changes of metadata). The UID makes it fail on a re-created pod of the same name.
func conditionPatch(uid types.UID, status corev1.ConditionStatus, reason, message string, now metav1.Time, relabel *templateInfo) []byte {
	metadata := map[string]any{"uid": uid}
	if relabel != nil {
		metadata["labels"] = map[string]any{
			appsv1alpha1.LabelTemplateHash: relabel.hash,
			appsv1alpha1.LabelUniqHash:     relabel.uniqHash,
			appsv1alpha1.LabelResizeHash:   relabel.resizeOnly,
		}
	}
	patch := map[string]any{
		"metadata": metadata,
		"status": map[string]any{
			"conditions": []any{map[string]any{
				"type":               appsv1alpha1.ConditionInPlaceUpdateReady,
				"status":             status,
				"reason":             reason,
				"message":            message,
				"lastTransitionTime": now,
			}},
		},
	}
	b, _ := json.Marshal(patch)
	return b
}

// inPlacePatch is the strategic merge patch moving pod to template to: new container images, the
// new template's labels and annotations (dropping those only the old template had, when the old
// template is still known) and the new hash labels.
func inPlacePatch(pod *corev1.Pod, from, to *templateInfo) []byte {
	identity := sets.New(appsv1alpha1.LabelManagedBy, appsv1alpha1.LabelTAppName, appsv1alpha1.LabelInstanceID,
		appsv1alpha1.LabelTemplateHash, appsv1alpha1.LabelUniqHash, appsv1alpha1.LabelResizeHash)
	diff := func(cur, want, old map[string]string, protect sets.Set[string]) map[string]any {
		out := map[string]any{}
		for k, v := range want {
			if protect.Has(k) {
				continue
			}
			if cv, ok := cur[k]; !ok || cv != v {
				out[k] = v
			}
		}
		for k := range old {
			if _, keep := want[k]; !keep && !protect.Has(k) {
				if _, ok := cur[k]; ok {
					out[k] = nil
				}
			}
		}
		return out
	}
	var oldLabels, oldAnnotations map[string]string
	if from != nil {
		oldLabels, oldAnnotations = from.template.Labels, from.template.Annotations
	}
	lbls := diff(pod.Labels, to.template.Labels, oldLabels, identity)
	lbls[appsv1alpha1.LabelTemplateHash] = to.hash
	lbls[appsv1alpha1.LabelUniqHash] = to.uniqHash
	lbls[appsv1alpha1.LabelResizeHash] = to.resizeOnly
	metadata := map[string]any{"uid": pod.UID, "labels": lbls}
	if ann := diff(pod.Annotations, to.template.Annotations, oldAnnotations, nil); len(ann) > 0 {
		metadata["annotations"] = ann
	}
	images := func(cur, want []corev1.Container) []any {
		have := map[string]string{}
		for _, c := range cur {
			have[c.Name] = c.Image
		}
		var out []any
		for _, c := range want {
			if img, ok := have[c.Name]; ok && img != c.Image {
				out = append(out, map[string]any{"name": c.Name, "image": c.Image})
			}
		}
		return out
	}
	spec := map[string]any{}
	if cs := images(pod.Spec.Containers, to.template.Spec.Containers); len(cs) > 0 {
		spec["containers"] = cs
	}
	if cs := images(pod.Spec.InitContainers, to.template.Spec.InitContainers); len(cs) > 0 {
		spec["initContainers"] = cs
	}
	patch := map[string]any{"metadata": metadata}
	if len(spec) > 0 {
		patch["spec"] = spec
	}
	b, _ := json.Marshal(patch)
	return b
}

// updateInPlace moves pods to their new template in place: for a pod with the readiness gate it
// first sets the gate False (so the pod leaves its Services' endpoints before any container
// restarts or is resized), and, once inPlaceUpdate.gracePeriodSeconds have passed (maybe in a
// later sync), changes container resources through pods/resize, then images and labels. The gate
// turns True again in a later sync, once every container reports its new image and resources
// (see shouldMarkReady).
func (c *Controller) updateInPlace(ctx context.Context, t *appsv1alpha1.TApp, templates *templateSet, ups []inPlaceUpdate) error {
	if len(ups) == 0 {
		return nil
	}
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	res := slowstart.Run(len(ups), 1, func(i int) error {
		u := ups[i]
		switch {
		case u.apply && u.resizeOnly:
			c.writes.expectResources(u.pod, u.to)
		case u.apply:
			c.writes.expectTemplate(u.pod, u.to.hash)
		default:
			c.writes.expectStatus(u.pod)
		}
		err := c.closeGate(ctx, u, now)
		if err == nil && u.apply {
			err = c.applyInPlace(ctx, templates, u)
		}
		if err != nil {
			c.writes.forget(u.pod)
			c.Recorder.Eventf(t, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedUpdate, "Error updating pod %s in place: %v", u.pod.Name, err)
			return err
		}
		if u.apply {
			c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonInPlaceUpdate, "Updating pod %s of instance %d in place to template %s", u.pod.Name, u.id, u.to.hash)
		}
		return nil
	})
	return res.Err
}

// closeGate sets the readiness gate of an in-place update False, if the plan says so.
func (c *Controller) closeGate(ctx context.Context, u inPlaceUpdate, now metav1.Time) error {
	if !u.closeGate {
		return nil
	}
	msg := inPlaceMessagePrefix + u.to.hash
	_, err := c.kubeClient.CoreV1().Pods(u.pod.Namespace).Patch(ctx, u.pod.Name, types.StrategicMergePatchType,
		conditionPatch(u.pod.UID, corev1.ConditionFalse, reasonInPlaceUpdating, msg, now, nil), metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("setting %s False on pod %s: %w", appsv1alpha1.ConditionInPlaceUpdateReady, u.pod.Name, err)
	}
	return nil
}

// applyInPlace resizes the pod's containers when their resources changed, then patches images
// and labels. The resize goes first: should it be refused, the pod keeps its old template hash
// and the next sync tries again. A resize-only update is the resize alone: pods/resize cannot
// write labels, and the pod's resources tell that it runs the new template (templateSet.runs);
// with the readiness gate, the labels come with the status patch that opens it.
func (c *Controller) applyInPlace(ctx context.Context, templates *templateSet, u inPlaceUpdate) error {
	pods := c.kubeClient.CoreV1().Pods(u.pod.Namespace)
	if patch := resizePatch(u.pod, u.to); patch != nil {
		if _, err := pods.Patch(ctx, u.pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); err != nil {
			return fmt.Errorf("resizing pod %s: %w", u.pod.Name, err)
		}
	}
	if u.resizeOnly {
		return nil
	}
	patch := inPlacePatch(u.pod, templates.byHash(u.pod.Labels[appsv1alpha1.LabelTemplateHash]), u.to)
	if _, err := pods.Patch(ctx, u.pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("updating pod %s in place: %w", u.pod.Name, err)
	}
	return nil
}

// markReady sets ConditionInPlaceUpdateReady True on pods whose containers all run the images and
// resources of their spec (with the hash labels of a resize-only update, in the same patch).
func (c *Controller) markReady(ctx context.Context, t *appsv1alpha1.TApp, gates []gateOpening) error {
	if len(gates) == 0 {
		return nil
	}
	now := metav1.NewTime(c.clock.Now()).Rfc3339Copy()
	res := slowstart.Run(len(gates), 1, func(i int) error {
		pod := gates[i].pod
		c.writes.expectStatus(pod)
		_, err := c.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType,
			conditionPatch(pod.UID, corev1.ConditionTrue, reasonImagesReady, "", now, gates[i].relabel), metav1.PatchOptions{}, "status")
		if err != nil {
			c.writes.forget(pod)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("setting %s True on pod %s: %w", appsv1alpha1.ConditionInPlaceUpdateReady, pod.Name, err)
		}
		return nil
	})
	return res.Err
}

// forceDeleteStuck force-deletes terminating pods past their deadline whose node is NotReady or
// gone, so that their instance can start again elsewhere.
func (c *Controller) forceDeleteStuck(ctx context.Context, t *appsv1alpha1.TApp, pods []*corev1.Pod) error {
	var errs []error
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			node, err := c.kubeClient.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("getting node %s of stuck pod %s: %w", pod.Spec.NodeName, pod.Name, err))
				continue
			}
			if err == nil && nodeReady(node) {
				continue
			}
		}
		err := c.kubeClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			c.Recorder.Eventf(t, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedDelete, "Error force-deleting pod %s stuck on node %s: %v", pod.Name, pod.Spec.NodeName, err)
			errs = append(errs, fmt.Errorf("force-deleting pod %s: %w", pod.Name, err))
			continue
		}
		c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonForceDelete, "Force-deleted pod %s stuck terminating on NotReady node %s", pod.Name, pod.Spec.NodeName)
	}
	return errors.Join(errs...)
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pruneTemplates removes templatePool entries that nothing refers to (no templates entry,
// defaultTemplateName or updateStrategy.template) and that no live pod runs.
func (c *Controller) pruneTemplates(ctx context.Context, t *appsv1alpha1.TApp, pods map[int]*corev1.Pod) (bool, error) {
	if len(t.Spec.TemplatePool) == 0 {
		return false, nil
	}
	used := sets.New[string](t.Spec.DefaultTemplateName, t.Spec.UpdateStrategy.Template)
	for _, n := range t.Spec.Templates {
		used.Insert(n)
	}
	running := sets.New[string]()
	for _, pod := range pods {
		if !isTerminating(pod) {
			running.Insert(pod.Labels[appsv1alpha1.LabelTemplateHash])
		}
	}
	var unused []string
	for n := range t.Spec.TemplatePool {
		tpl := t.Spec.TemplatePool[n]
		if !used.Has(n) && !running.Has(TemplateHash(&tpl)) {
			unused = append(unused, n)
		}
	}
	if len(unused) == 0 {
		return false, nil
	}
	sort.Strings(unused)
	cp := t.DeepCopy()
	for _, n := range unused {
		delete(cp.Spec.TemplatePool, n)
	}
	if _, err := c.client.AppsV1alpha1().TApps(t.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
		c.Recorder.Eventf(t, corev1.EventTypeWarning, appsv1alpha1.ReasonFailedTemplatePrune, "Error removing unused templates %s: %v", strings.Join(unused, ", "), err)
		return false, err
	}
	c.Recorder.Eventf(t, corev1.EventTypeNormal, appsv1alpha1.ReasonTemplatePruned, "Removed unused templates %s from templatePool", strings.Join(unused, ", "))
	return true, nil
}

// writeStatusInOrder writes the status a main or spec sync computed from observation seq, unless
// the status queue wrote one of a later observation while this sync wrote pods; with a failure
// to report (failed) it writes all the same, and has the status queue write the latest status
// again after it.
func (c *Controller) writeStatusInOrder(ctx context.Context, t *appsv1alpha1.TApp, status appsv1alpha1.TAppStatus, seq uint64, failed bool) error {
	_, stale, err := c.order.write(expectations.ObjectKey(t), seq, failed, func() error {
		_, err := c.updateStatus(ctx, t, status)
		return err
	})
	if stale && failed {
		c.status.Queue.Add(cache.MetaObjectToName(t))
	}
	return err
}

// updateStatus writes status through the status subresource, only if it differs from the
// TApp's current status. While the cache has not caught up with the controller's own last status
// write, that write (and the version it produced) counts as the current status: otherwise every
// sync in that window would write again from a stale version and fail with a conflict. It reports
// whether it wrote.
func (c *Controller) updateStatus(ctx context.Context, t *appsv1alpha1.TApp, status appsv1alpha1.TAppStatus) (bool, error) {
	if len(status.Statuses) == 0 {
		status.Statuses = nil
	}
	key := expectations.ObjectKey(t)
	current, version := c.statuses.Current(key, t.ResourceVersion, &t.Status)
	if equality.Semantic.DeepEqual(*current, status) {
		return false, nil
	}
	cp := t.DeepCopy()
	cp.ResourceVersion = version
	cp.Status = status
	out, err := c.statusClient.AppsV1alpha1().TApps(t.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		c.statuses.Forget(key)
		return false, err
	}
	c.statuses.Wrote(key, t.ResourceVersion, out.ResourceVersion, out.Status.DeepCopy())
	return true, nil
}
