// Package tapp is the TApp controller of the workload-agent (docs/tapp.md): it runs instances
// with stable ids 0 … replicas-1, each its own pod <tapp>-<id> from its own template, kills and
// restarts instances one by one, updates pods in place when only images change and re-creates
// them otherwise, rolling within maxUnavailable in id order.
//
// The controller follows k8s.io/sample-controller: informers feed a rate-limited work queue of
// TApp keys ("tapp"), and syncHandler reconciles one TApp from the listers only. Pod creations
// and deletions go out in slow-start batches (package slowstart) guarded by UID-tracking
// expectations, and pod patches by a record of writes in flight, so that a lagging cache never
// duplicates work. As in the ReplicaSet controller, a sync checks the expectations before it
// reads the pods, and creates or deletes only if they were satisfied then: an observation that
// satisfies them during the sync is not in the pod list the sync already holds. Deletions go
// before creations: a sync that deletes creates nothing, the next one (once the deletions are
// observed) does.
//
// # Identity
//
// Pod <tapp>-<id> carries the template's labels plus app.kubernetes.io/managed-by=workload-agent,
// the TApp name, the instance id, the template hash (of the whole template), the uniq hash (of
// the pod spec with every image blanked, without the template's metadata) and the resize hash
// (of the whole template with its containers' cpu and memory values zeroed), and a controller
// reference to the TApp. Claims <claim>-<tapp>-<id> carry the same identity labels and no owner
// reference: they outlive pods and the TApp, as StatefulSet claims do. A pod name taken by a pod
// of another owner is reported (ReplicaFailure, FailedCreate), never adopted.
//
// # Updates
//
// A pod whose template hash differs from its instance's template is updated: in place when the
// uniq hashes match (images, labels and annotations changed), else deleted and re-created.
// Instances on the rolling template (RollingTemplate: updateStrategy.template, else the default
// template) go in ascending id order within updateStrategy.maxUnavailable (default 1, percentages
// of replicas round down, never below 1); instances on other templates within
// forceUpdate.maxUnavailable (default 100%). Each group's budget is its limit minus its instances
// already unavailable (no pod, terminating, not ready for minReadySeconds, or mid in-place
// update); updating an instance that is already unavailable costs nothing. partition P keeps the
// pods of ids below P as they are, and paused stops starting updates; neither stops creations.
// An instance below the partition is made from its template in the current revision, as a
// StatefulSet's ordinal below its partition (held.go); any other from its own template.
//
// # In-place updates and the readiness gate
//
// Every pod is created with the readiness gate ConditionInPlaceUpdateReady (unless
// updateStrategy.inPlaceUpdate.readinessGate is false: then no gate and no condition writes,
// one write per created pod and per in-place update), and the controller
// sets the condition True through pods/status right after the create call returns: a new pod
// runs the images of its spec by definition, and opening the gate while the pod is still being
// scheduled keeps the gate off the pod's path to Ready. (If that patch fails, the gate is opened
// once the pod runs and every container, and sidecar init container, reports the image of its
// spec.) An in-place update
// first sets it False (reason InPlaceUpdating, message naming the target template hash), so the
// pod leaves its Services before any container restarts, then patches images, labels and
// annotations with a strategic merge patch carrying the pod UID as a precondition. The condition
// goes True again when the containers report the new images and the cache shows the new template
// hash (a status that still shows the old spec does not count). Images are compared after
// normalisation (nginx:1 equals docker.io/library/nginx:1).
//
// inPlaceUpdate.gracePeriodSeconds puts a wait between the gate going False and the patch: the
// sync that closes the gate requeues itself (AddAfter) for the time left, measured from the
// condition's lastTransitionTime. Container resources (cpu, memory of regular containers) are
// in-place too: the uniq hash leaves them out, and the controller patches them through the
// pods/resize subresource before the image and label patch; the instance stays updating (and
// the gate closed) until the pod's container statuses report the new resources and no
// PodResizePending or PodResizeInProgress condition is True. When only cpu/memory values changed
// (the resize hash, a label of its own, matches), the resize is the whole update: pods/resize
// cannot write labels, so the gate's opening writes the new hash labels (3 writes per pod with
// the gate), and without the gate no label is written at all (1 write). Until then a pod's
// template hash label lags, so for a pod without the gate, or with its gate closed for an
// update, which template it runs is told from its spec's resources (templateSet.runs).
//
// # Revision history
//
// Every distinct pair of spec.template and spec.templatePool gets a ControllerRevision
// <tapp>-<hash> holding the patch {"spec":{"template":…,"templatePool":…}} that restores both,
// labelled with the managed-by label and the TApp name and controlled by the TApp (package
// revision, as the UnitedDeployment and StatefulSet controllers do): a hash collision bumps
// status.collisionCount, templates that come back reuse their old revision renumbered as the
// newest, and revisions beyond spec.revisionHistoryLimit (default 10) are deleted oldest first,
// never the current or the updated one. status.updateRevision names the revision of the current
// templates, status.currentRevision the one every instance ran when the last rollout completed
// (an instance the partition keeps on an older template keeps it the old one, as a StatefulSet's
// partition does: a Canary holding the TApp reads the difference as a release to make).
// Recording happens in every sync, so a change made by kubectl apply, edit, patch or the plugin
// is recorded alike; `kubectl workload history` and `undo` read these revisions.
//
// # Status
//
// replicas, readyReplicas and availableReplicas count live (not terminating) pods;
// updatedReplicas counts pods on their instance's template and not mid in-place update. statuses
// has an entry for every id below replicas and every id that still has a pod. appStatus is Killed
// when every instance is killed, Succ/Failed when every running instance's pod finished (Failed if
// any failed), Running when any instance runs, else Pending. Conditions: Available (at least
// wanted − maxUnavailable instances available), Progressing (RolloutInProgress, RolloutComplete,
// or False with RolloutPaused) and ReplicaFailure (present only while something fails: invalid or
// non-matching selector, missing template, failed create/delete/patch). Status is written only
// when it changed. Events are recorded for every create, delete, kill, in-place update, forced
// deletion and template prune, and Warnings for failures.
//
// # Permissions
//
// Besides its own resources (tapps get/list/watch/update, tapps/status update), the controller
// needs pods get/list/watch/create/delete/patch, pods/status patch, pods/resize patch, persistentvolumeclaims
// get/list/watch/create, controllerrevisions get/list/watch/create/update/delete, nodes get
// (forceDeletePod only) and events create.
package tapp
