// Package uniteddeployment is the UnitedDeployment controller (docs/uniteddeployment.md): one service
// spread over subsets (usually zones), each run by one workload — a StatefulSet, a Deployment or
// a TApp — made from the UnitedDeployment's template with the subset's node selector term and
// tolerations merged in. It splits spec.replicas among the subsets, keeps a ControllerRevision
// per distinct spec.template and releases a new template subset by subset through per-subset
// partitions.
//
// The controller has the shape of every controller of the agent (docs/architecture.md, "The
// picture"; the TApp controller is the model), on the shared base (pkg/controller/base: a queue of
// cache.ObjectName keys named "uniteddeployment" with the shared rate limiter, Events from
// "uniteddeployment-controller"). syncHandler (sync.go) runs named steps:
//
//   - observe (observe.go): the UnitedDeployment, its subset workloads of every kind, its
//     ControllerRevisions and pods, from the informer caches only; and its status as far as the
//     controller knows (its own last status write while the cache lags it,
//     expectations.StatusWrites).
//   - plan (plan.go, pure): computePlan allocates the replicas and finds or names the revision
//     of spec.template; once that revision exists, planSubsets decides which workloads to
//     create, update (built in full, written only when they differ) and delete, what is held
//     and which old revisions go.
//   - writes (execute.go, planAndWrite): the revision, then creates, updates and deletes under expectations
//     (the next sync waits until the cache shows them: the hub's counted, a member's by member,
//     kind and name, memberwrites.go), then old revisions; every write the API
//     server refuses is recorded as a failure with the server's message and an Event.
//   - status (status.go, pure): computeStatus from the observation and what the sync did;
//     one status write, only when it changed (a resync of a settled UnitedDeployment writes
//     nothing).
//
// Errors are returned to be retried with backoff. The kinds differ only in their accessors
// (statefulset.go, deployment.go, tapp.go); building, listing, creating, updating and deleting
// a workload is written once over them (kinds.go).
//
// # Subset workloads
//
// A subset workload is named from generateName <ud>-<subset>-, is controlled by the
// UnitedDeployment (owner reference), and carries the template's labels and annotations plus
// app.kubernetes.io/managed-by=workload-agent and the UnitedDeployment, subset and revision labels
// (apps.workload.dev/united-deployment, /subset, /revision) and the annotation
// apps.workload.dev/subset-hash (a hash of the subset's nodeSelectorTerm and tolerations). Its
// selector is the UnitedDeployment's selector plus the UnitedDeployment and subset labels. Its
// pod template gets the same four labels, so that the agent's managed-pod informer sees the pods
// and the controller counts them per subset and revision; the subset's nodeSelectorTerm is ANDed
// into every term of the pod's required node affinity (or becomes its only term) and its
// tolerations are appended.
//
// A workload is updated from the template only when its revision label or subset hash differs
// from what the spec asks for; otherwise only replicas, partition and pause are written, and a
// workload that already matches is not written at all. Fields a StatefulSet cannot change
// (selector, volumeClaimTemplates, serviceName, podManagementPolicy) keep their values; a
// Deployment and a TApp keep their selector, and a TApp keeps per-instance spec.statuses (an
// instance killed on a subset TApp stays killed) unless the template sets some.
//
// Of several workloads of one subset the oldest is kept and the others deleted; workloads of a
// subset no longer listed are deleted. After a template-kind switch the new kind's workloads are
// created at once, and an old-kind workload of a listed subset is deleted only once the new
// workload of its subset has all its allocated replicas ready on the updated revision (no subset
// is ever left without serving pods); one of an unlisted subset is deleted at once. Workloads
// that are not controlled by the UnitedDeployment are never adopted. Deletes are guarded by the
// workload's UID. A workload being deleted counts as gone; its deletion is observed (for
// expectations) when it disappears.
//
// # Replicas
//
// Allocate splits spec.replicas: explicit subset replicas (an integer, or a percentage of
// spec.replicas rounded half up) first; the rest evenly among the other subsets, ordered by
// (current workload replicas, name), the remainder going one each to the last in that order —
// those already holding the most — so that scaling moves as few pods as possible. Explicit
// replicas adding up to more than spec.replicas, or to less while every subset is explicit, are
// reported as SubsetFailure=True (reason InvalidReplicas) and a Warning Event when first seen,
// and nothing else changes (no revision, no workload write) until the spec is fixed.
//
// # Revisions
//
// Every distinct spec.template gets a ControllerRevision <ud>-<hash> holding the patch
// {"spec":{"template":…}} that restores it; a hash collision increments status.collisionCount
// and a template equal to an older revision reuses that revision with the next revision number.
// status.updatedRevision is the revision of the current template; status.currentRevision becomes
// it once every subset workload carries it, nothing of an older kind is left and every one of
// spec.replicas pods runs it and is ready. Revisions beyond spec.revisionHistoryLimit (default
// 10) are deleted oldest first, never the current or updated one nor one a workload carries.
//
// # Partitions and pause
//
// updateStrategy.manualUpdate.partitions[subset] is how many of the subset's pods keep their old
// revision: absent means 0, a value above the subset's replicas is capped (status shows the
// capped value). StatefulSet subsets use spec.updateStrategy.rollingUpdate.partition (unless the
// template asks for OnDelete), TApp subsets spec.updateStrategy.partition. A Deployment cannot
// keep part of its pods on an old template: a non-zero partition on a Deployment subset is
// refused — the subset's template is held (replicas still follow the allocation) and
// SubsetFailure=True with reason PartitionUnsupported says so; use updateStrategy.paused.
//
// updateStrategy.paused holds every subset's template and freezes a rollout in flight with each
// kind's own means: a StatefulSet's partition is set to its replicas, a Deployment's spec.paused
// and a TApp's spec.updateStrategy.paused are set. Scaling goes on while paused. A template-kind
// switch replaces workloads even while paused or partitioned: there is no way to keep pods of a
// kind the template no longer names.
//
// # Status
//
// status.replicas, readyReplicas, updatedReplicas and updatedReadyReplicas count the live
// (neither terminating nor finished) pods carrying the UnitedDeployment label; subsetStatuses
// give each listed subset's allocated replicas, ready and updated pods and partition;
// labelSelector is spec.selector in string form for the scale subresource. Conditions:
// SubsetProvisioned (False while a create or delete failed, reason ProvisionFailed, or while an
// old-kind workload waits for its replacement, reason Replacing), SubsetUpdated (False while a
// subset's workload does not carry the updated revision: Paused, PartitionUnsupported,
// NotReleased (a member subset whose partition keeps every pod), Updating after a failed update, or ProvisionFailed when the subset has no workload because its
// create failed) and SubsetFailure (True with the first failure's reason and
// every failure's message, else False with reason NoFailure). Every write the API server refuses
// — a workload's create, update or delete, a revision's create, renumbering or pruning — is such
// a failure, its message carrying the server's, until the write succeeds. Rollout progress is published
// with metrics.SetRolloutProgress("UnitedDeployment", …) and forgotten when the
// UnitedDeployment is deleted.
//
// Events: SuccessfulCreate, SuccessfulUpdate, SuccessfulDelete and RolloutComplete (Normal);
// FailedCreate, FailedUpdate, FailedDelete, InvalidReplicas and PartitionUnsupported (Warning).
package uniteddeployment
