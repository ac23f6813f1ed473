package slowstart

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

// recorder remembers which indices were called, and in which batch, by watching how many calls
// were running before a batch completed: Run waits for a whole batch, so we can reconstruct the
// batches from the order of the indices (index i of batch b is always >= all indices of b-1).
type recorder struct {
	mu    sync.Mutex
	calls []int
}

func (r *recorder) fn(fail map[int]bool) func(int) error {
	return func(i int) error {
		r.mu.Lock()
		r.calls = append(r.calls, i)
		r.mu.Unlock()
		if fail[i] {
			return errors.New("boom")
		}
		return nil
	}
}

func TestRun(t *testing.T) {
	cases := []struct {
		name          string
		count, init   int
		fail          map[int]bool
		wantAttempted int
		wantSucceeded int
		wantErr       bool
	}{
		{name: "nothing", count: 0, init: 1},
		{name: "all succeed", count: 10, init: 1, wantAttempted: 10, wantSucceeded: 10},
		{name: "first call fails stops at once", count: 10, init: 1, fail: map[int]bool{0: true}, wantAttempted: 1, wantSucceeded: 0, wantErr: true},
		// batches: [0] [1 2] [3 4 5 6] [7 …]: failure at 4 ends after the third batch.
		{name: "failure in third batch", count: 20, init: 1, fail: map[int]bool{4: true}, wantAttempted: 7, wantSucceeded: 6, wantErr: true},
		{name: "two failures in one batch", count: 20, init: 1, fail: map[int]bool{1: true, 2: true}, wantAttempted: 3, wantSucceeded: 1, wantErr: true},
		{name: "last batch is truncated", count: 5, init: 1, wantAttempted: 5, wantSucceeded: 5},
		{name: "initial batch 0 counts as 1", count: 3, init: 0, fail: map[int]bool{0: true}, wantAttempted: 1, wantErr: true},
		{name: "bigger initial batch", count: 10, init: 4, fail: map[int]bool{3: true}, wantAttempted: 4, wantSucceeded: 3, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			res := Run(tc.count, tc.init, r.fn(tc.fail))
			if res.Attempted != tc.wantAttempted || res.Succeeded != tc.wantSucceeded || (res.Err != nil) != tc.wantErr {
				t.Fatalf("Run = %+v, want attempted %d succeeded %d err %v", res, tc.wantAttempted, tc.wantSucceeded, tc.wantErr)
			}
			if got := res.Skipped(tc.count); got != tc.count-tc.wantAttempted {
				t.Errorf("Skipped = %d, want %d", got, tc.count-tc.wantAttempted)
			}
			calls := append([]int(nil), r.calls...)
			sort.Ints(calls)
			if len(calls) != tc.wantAttempted {
				t.Fatalf("fn called %d times, want %d", len(calls), tc.wantAttempted)
			}
			for i, c := range calls {
				if c != i {
					t.Fatalf("fn called for %v, want 0 … %d each once", calls, tc.wantAttempted-1)
				}
			}
		})
	}
}

func TestBatchBoundaries(t *testing.T) {
	// Batches of 15 calls are [0] [1 2] [3 … 6] [7 … 14]. Every call must start only after all
	// calls of the earlier batches completed, and all calls of one batch must run together: each
	// call waits until its whole batch has started, which would time out if Run ran them one by one.
	batchEnd := func(i int) int { // one past the last index of i's batch
		end := 1
		for end <= i {
			end = 2*end + 1
		}
		return min(end, 15)
	}
	batchStart := func(i int) int { return (batchEnd(i)+1)/2 - 1 }
	var mu sync.Mutex
	started, completed := 0, 0
	var problems []string
	Run(15, 1, func(i int) error {
		mu.Lock()
		started++
		if completed != batchStart(i) {
			problems = append(problems, fmt.Sprintf("index %d started after %d completed calls, want %d", i, completed, batchStart(i)))
		}
		mu.Unlock()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			all := started >= batchEnd(i)
			mu.Unlock()
			if all {
				break
			}
			if time.Now().After(deadline) {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("index %d: the rest of its batch never started", i))
				mu.Unlock()
				break
			}
			time.Sleep(time.Millisecond)
		}
		mu.Lock()
		completed++
		mu.Unlock()
		return nil
	})
	for _, p := range problems {
		t.Error(p)
	}
}
