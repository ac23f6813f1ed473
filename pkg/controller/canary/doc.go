// Package canary is the Canary controller: it releases a new pod template through steps
// (batches of pods, pauses for promotion or for a time, analysis checks, a progress deadline)
// and rolls it back on spec.rollback or when a check fails, in one of three release modes
// chosen from the spec (release.go, docs/architecture.md "The Canary: one step machine, one
// release per mode"):
//
//   - the Deployment pair (spec.stableRef + spec.canary, release_pair.go): a canary Deployment
//     next to a stable Deployment, serving capacity moved from stable to canary only as canary
//     pods become available, traffic through the Gateway API following the steps;
//   - in place (spec.targetRef of a StatefulSet, TApp, UnitedDeployment or DaemonSet,
//     release_inplace.go and one inplace_<kind>.go per kind, docs/canary-targets.md): the
//     workload's partition held between releases and lowered step by step;
//   - a Deployment target (spec.targetRef of a Deployment, release_deployment.go): the user's
//     Deployment held paused while a temporary canary Deployment carries each new template
//     through the pair's steps.
//
// The step machine (steps.go, bake.go) is the same for every mode and calls the mode's
// releasePlan; a releasePlan never calls it back. Both decide into one decision (decision.go).
//
// The controller follows k8s.io/sample-controller on the shared base (pkg/controller/base:
// the work queue of Canary names "canary", its rate limiter, handlers and workers) in the
// shape every controller of the agent has (docs/architecture.md, "The picture"): a sync
// observes the Canary and its workloads from the listers (but for a deleted Canary's canary
// Deployment: see Deletion), computes a plan as a pure function of what it observed
// (computePlan: the batch state, the writes as data, the Events), makes the writes, computes
// the status from the plan and the writes' outcome (computeStatus), and writes it only when it
// changed. Every write to a Deployment sets an absolute value (a replica count with a merge
// patch {"spec":{"replicas":N}}, a pod template), or is a JSON patch with a test, so a sync
// repeated on a lagging cache writes the same value again or is refused, and never doubles an
// action.
//
// What follows describes the Deployment pair; docs/canary-targets.md the other two modes.
//
// The Canary's status is the controller's memory of the release, so a sync must not act on a
// Canary older than the status it last wrote, nor on a Deployment older than its own last write
// of it. The controller remembers both: its last status write per Canary (with the versions the
// cache may still show from before it), and each Deployment write the cache does not show yet
// (pendingWrites, its expectations: a create until the cache has the Deployment, any other write
// while the cache still holds the version it was based on, for at most two minutes). A sync on
// a lagging cache works from those writes instead of the cache, so it neither repeats nor undoes
// them.
//
// A write the API server refuses (a canary Deployment create, template update or scale, a
// stable scale or restore) stops the sync's writes and shows on the Canary: phase Degraded and
// condition Degraded=True with reason FailedCreate or FailedUpdate and the server's message
// (and a Warning Event); the sync is retried with backoff. A status write refused for a reason
// other than a conflict is reported by an Event and by the Canary's previous status with that
// refusal as its Degraded condition.
//
// # Batches
//
// v1alpha1.CanaryBatchPlan gives the canary pods of every batch. status.currentBatch and the per-batch states
// in status.batches (Pending, Upgrading, Paused, Completed, with start and finish times) are the
// controller's memory of where the release is. A batch completes when the canary Deployment
// runs exactly its pods, from the Canary's current template and minReadySeconds, all available
// as reported by the Deployment controller (which applies minReadySeconds). It then pauses when
// pauseType says so (First: after batch 1; All: after every batch but the last; None: never)
// and spec.approvedBatch is below its number; otherwise the next batch starts at once.
//
// # Capacity
//
// At every step the stable Deployment is set to replicas − (available canary pods, at most the
// batch's size): it shrinks only as canary pods become available, and grows back if they stop
// being available. Canary availability counts only once the Deployment controller has observed
// the canary Deployment's latest spec. The canary Deployment only shrinks (after a rollback is
// cleared, or on rollback itself) once the stable Deployment has the pods to replace it
// available, with no rollout of its own under way. The canary Deployment is created with
// maxUnavailable 0, so a new canary template does not take pods away either.
//
// # Promotion
//
// A promotion is recorded in spec.approvedBatch as a batch number, never incremented: a batch k
// that has completed waits while spec.approvedBatch < k. Promoting the paused batch k sets it to
// k, so repeated or concurrent promotes of one batch approve the same value and advance one
// batch. The plugin sends the JSON patch
//
//	[{"op":"test","path":"/spec/approvedBatch","value":<value read>},
//	 {"op":"replace","path":"/spec/approvedBatch","value":<k>}]
//
// (spec.approvedBatch defaults to 0 in the CRD, so it is always present); of two promotes that
// read the same value, the second fails its test with 422 and changes nothing. A full promote
// sets it to the number of batches, so no batch pauses any more.
//
// # Pause
//
// spec.paused holds the release where it is: no batch starts or completes, the canary
// Deployment is not scaled and the stable Deployment is not shrunk (it still grows back if
// canary pods stop being available). A release that has not begun does not begin; a completed
// one stays Completed.
//
// # Rollback
//
// Before it creates the canary Deployment, the controller records the stable Deployment (name,
// replicas and pod template) in the Canary's v1alpha1.AnnotationStableSnapshot. spec.rollback then, at any
// batch or after completion: restores that pod template on the stable Deployment if it changed
// since (one JSON patch replacing /spec/template and /spec/replicas) or else scales it to
// spec.replicas; waits until the stable Deployment has spec.replicas pods available on its
// current template; and only then scales the canary Deployment to 0 (RollingBack, then
// RolledBack once no canary pod is left). Clearing spec.rollback afterwards starts the release
// again from batch 1 (spec.approvedBatch is not reset: approvals given before still hold).
// Rollback is not held by spec.paused.
//
// # Degraded
//
// A missing stable Deployment, a Deployment named spec.canary.name that this Canary does not
// control, empty canary template labels, or canary template labels its Deployment's (immutable)
// selector no longer selects make the Canary Degraded, with the reason in the Degraded condition
// and the message; nothing is written to any Deployment until it is fixed.
//
// # Deletion
//
// Deleting a Canary (kubectl delete, with the default background propagation, or
// --cascade=orphan) never takes a Deployment down: both Deployments keep serving as they are,
// at any batch and after completion, when the canary Deployment runs every pod and the stable
// one none. To undo a release, abort it (spec.rollback), wait for RolledBack, then delete the
// Canary. A deleted Canary cannot be rolled back: the snapshot of the stable Deployment goes
// with it, and restoring the stable Deployment is then a manual scale.
//
// The canary Deployment carries the Canary's controller reference, so the garbage collector
// would delete it with the Canary. The controller therefore adds v1alpha1.FinalizerOrphanCanary to every
// Canary on its first sync, before anything else and before it creates the canary Deployment
// (a merge patch {"metadata":{"finalizers":[...,v1alpha1.FinalizerOrphanCanary],"resourceVersion":<read>}},
// which lists the finalizers already there and is refused with 409 if the Canary changed since
// it was read). A Canary released by an agent without the finalizer gets it on its next sync;
// deleted before that, its canary Deployment is garbage collected.
// Once the Canary has a deletionTimestamp, the controller writes no status any more; it reads
// from the API server (not the cache, which may not show a canary Deployment created moments
// before) the Deployment spec.canary.name and any other the cache shows owned by the Canary,
// removes the Canary's owner reference from each with a JSON patch tested on its uid
//
//	[{"op":"test","path":"/metadata/ownerReferences/<i>/uid","value":"<canary uid>"},
//	 {"op":"remove","path":"/metadata/ownerReferences/<i>"}]
//
// (other owner references are kept; replicas, template and labels are not touched), records a
// Normal CanaryDeploymentOrphaned Event, and only then removes its finalizer:
//
//	[{"op":"test","path":"/metadata/finalizers/<j>","value":"apps.workload.dev/orphan-canary-deployment"},
//	 {"op":"remove","path":"/metadata/finalizers/<j>"}]
//
// When there is no canary Deployment, or it is not the Canary's, only the finalizer is removed.
// A test that fails (422: the object changed since it was read) is retried once the cache has
// caught up; an owner reference already removed is not patched again.
//
// The orphaned canary Deployment keeps its app.kubernetes.io/managed-by and
// apps.workload.dev/canary labels. A new Canary naming it as spec.canary.name is Degraded
// (CanaryNameConflict): the next release names it as its stableRef instead, or another canary.
//
// A Canary created and deleted before its first sync has no finalizer and is gone at once;
// the finalizer patch of a sync that raced the deletion finds nothing (404) and the sync ends
// there, so no canary Deployment is created for it.
//
// A Canary deleted while the agent is not running stays, with its deletionTimestamp, until the
// agent runs and orphans its canary Deployment. To delete it without the agent, remove the
// finalizers by hand:
//
//	kubectl patch canary X --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]'
//
// but the garbage collector then deletes the canary Deployment with its pods: to keep it,
// first remove the owner reference from it (check that entry 0 is the Canary's):
//
//	kubectl patch deployment <spec.canary.name> --type=json -p '[{"op":"test","path":"/metadata/ownerReferences/0/kind","value":"Canary"},{"op":"remove","path":"/metadata/ownerReferences/0"}]'
//
// A deletion with propagationPolicy Foreground (kubectl delete --cascade=foreground, or a tool
// set to delete that way) asks the garbage collector to delete the dependents, which it does
// whatever the Canary's finalizers: the controller does not race it, sends a Warning
// ForegroundDeletion Event and removes its finalizer, and the canary Deployment is deleted.
package canary
