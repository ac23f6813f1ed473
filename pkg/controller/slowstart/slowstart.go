// Package slowstart runs many similar API calls in batches that grow 1, 2, 4, … and stops at the
// first batch that has an error. A request that is bound to fail (quota exhausted, a webhook
// refusing every pod) then fails once or twice instead of hundreds of times, while a healthy
// large scale-out still finishes in a logarithmic number of rounds. This is the slowStartBatch of
// Kubernetes' ReplicaSet and Job controllers.
package slowstart

import (
	"sync"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Result says how far Run got.
type Result struct {
	// Attempted is how many calls were made: fn was called for indices 0 … Attempted-1 and
	// never for the rest, which the caller must treat as skipped (e.g. lower its expectations).
	Attempted int
	// Succeeded is how many of the attempted calls returned nil.
	Succeeded int
	// Err aggregates the errors of the batch that stopped the run, nil if all succeeded.
	Err error
}

// Skipped is how many of count calls were never attempted.
func (r Result) Skipped(count int) int { return count - r.Attempted }

// Run calls fn(i) for i in 0 … count-1 in batches of initialBatchSize, then twice as many each
// time (never more than remain); the calls of one batch run concurrently. After a batch in which
// any call failed, Run returns without starting another. initialBatchSize below 1 counts as 1.
func Run(count, initialBatchSize int, fn func(i int) error) Result {
	var res Result
	batch := max(initialBatchSize, 1)
	for res.Attempted < count {
		n := min(batch, count-res.Attempted)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for k := 0; k < n; k++ {
			i := res.Attempted + k
			if n == 1 {
				errs[k] = fn(i)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = fn(i)
			}()
		}
		wg.Wait()
		res.Attempted += n
		var failed []error
		for _, err := range errs {
			if err != nil {
				failed = append(failed, err)
			}
		}
		res.Succeeded += n - len(failed)
		if len(failed) > 0 {
			res.Err = utilerrors.NewAggregate(failed)
			return res
		}
		batch *= 2
	}
	return res
}
