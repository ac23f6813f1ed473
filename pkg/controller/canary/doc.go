// Package canary is the Canary controller: it releases a canary Deployment next to a stable
// Deployment in batches, moving serving capacity from stable to canary only as canary pods become
// available, pausing for promotion where spec.pauseType says, and rolling everything back to the
// stable Deployment on spec.rollback (DESIGN.md §2.3).
//
// The controller follows k8s.io/sample-controller: shared informers and their listers, a typed
// rate-limited work queue of Canary names ("canary"), and a sync handler that reads only from
// the listers, deep-copies before mutating, writes status only when it changed and requeues on
// errors. Every write to a Deployment sets an absolute value (a replica count with a merge patch
// {"spec":{"replicas":N}}, a pod template), so a sync repeated on a lagging cache writes the same
// value again and never doubles an action.
//
// The Canary's status is the controller's memory of the release, so a sync must not act on a
// Canary older than the status it last wrote. A sync therefore decides everything first, then
// updates the status with the resourceVersion it read (even unchanged, when it has Deployment
// writes to make), and only once the API server accepted that makes its Deployment writes and
// sends its Events. On a stale cache the status update is refused with a conflict, nothing else
// is written, and the Canary is requeued.
//
// # Batches
//
// BatchPlan gives the canary pods of every batch. status.currentBatch and the per-batch states
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
// replicas and pod template) in the Canary's AnnotationStableSnapshot. spec.rollback then, at any
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
// The canary Deployment is owned by the Canary, so deleting the Canary deletes it by garbage
// collection, even after completion when it serves every pod. Roll back first, or delete with
// --cascade=orphan to keep it.
package canary
