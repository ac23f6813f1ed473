package workload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Retryable lists the kinds retry acts on: the Retriers.
var Retryable = kindsWith[Retrier]()

// Retry decides what `retry` does to an object (its kind's Retrier).
func Retry(ref Ref, obj *unstructured.Unstructured) (Change, error) {
	r, err := capability[Retrier](ref, "cannot be retried")
	if err != nil {
		return Change{}, err
	}
	return r.Retry(ref, obj)
}

// retriesPath counts the times a Canary's release was started again after an abort.
var retriesPath = []string{"spec", "retries"}

// RetryPatch is the JSON patch that starts an aborted release again from step 1: spec.retries
// from its value as read (tested: of two retries that read it, the second fails and changes
// nothing) to one more, which clears an abort the agent made (status.abort holds while its
// retries equal spec.retries); spec.rollback false, which ends a person's abort; and
// spec.approvedBatch 0, so that every pause of the release waits for a person again.
func RetryPatch(retries int64, present bool) (Patch, error) {
	path := Pointer(retriesPath...)
	ops := []Op{Test(path, retries), Replace(path, retries+1)}
	if !present {
		ops = []Op{Test(path, nil), Add(path, 1)}
	}
	return JSONPatch(append(ops,
		Add(Pointer(rollbackPath...), false),
		Add(Pointer(approvedBatchPath...), 0))...)
}

// RetryCanary decides what `retry` does to a Canary: start its release again from step 1 when
// it was aborted (by itself, status.abort, or by a person, spec.rollback); refuse otherwise,
// changing nothing.
func RetryCanary(ref Ref, obj *unstructured.Unstructured) (Change, error) {
	c, err := AsCanary(obj)
	if err != nil {
		return Change{}, err
	}
	retries, present, err := unstructured.NestedInt64(obj.Object, retriesPath...)
	if err != nil {
		return Change{}, fmt.Errorf("%s: spec.retries: %w", ref, err)
	}
	aborted := c.Status.Abort != nil && int64(c.Status.Abort.Retries) >= retries
	rollingBack := c.Status.Phase == v1alpha1.CanaryRollingBack || c.Status.Phase == v1alpha1.CanaryRolledBack
	// Retried already, and the agent has not started the release again yet: a second retry
	// would only count one more.
	if (c.Status.Abort != nil && !aborted) || (c.Status.Abort == nil && !c.Spec.Rollback && rollingBack && c.Status.ObservedGeneration < c.Generation) {
		return Unchanged(ref, "%s was already retried: waiting for the agent to start the release again", ref), nil
	}
	if !aborted && !c.Spec.Rollback && !rollingBack {
		phase := string(c.Status.Phase)
		if phase == "" {
			phase = "not yet observed by the agent"
		}
		return Change{}, fmt.Errorf("%s was not aborted (phase %s): retry starts an aborted or rolled-back release again; abort it first with `kubectl workload abort %s`", ref, phase, ref)
	}
	p, err := RetryPatch(retries, present)
	if err != nil {
		return Change{}, err
	}
	why := "rolled back on request"
	if aborted {
		why = fmt.Sprintf("aborted at %s %d: %s", stepWord(c), c.Status.Abort.Step, c.Status.Abort.Reason)
	}
	return Change{Ref: ref, Patch: &p,
		Line: fmt.Sprintf("%s retried (%s): the release starts again from %s 1 with its current template (retry %d)", ref, why, stepWord(c), retries+1)}, nil
}
