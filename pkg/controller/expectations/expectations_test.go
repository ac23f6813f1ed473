package expectations_test

import (
	"sync"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

const rsKey = "default/tapp-a"

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newFake(opts ...expectations.Option) (*expectations.ControllerExpectations, *testclock.FakePassiveClock) {
	clk := testclock.NewFakePassiveClock(epoch)
	return expectations.NewControllerExpectations(append([]expectations.Option{expectations.WithClock(clk)}, opts...)...), clk
}

func mustGet(t *testing.T, e interface {
	GetExpectations(string) (expectations.Expectations, bool)
}, key string) expectations.Expectations {
	t.Helper()
	exp, ok := e.GetExpectations(key)
	if !ok {
		t.Fatalf("GetExpectations(%q): no record", key)
	}
	return exp
}

func assertCounts(t *testing.T, got expectations.Expectations, add, del int) {
	t.Helper()
	if got.Add != add || got.Del != del {
		t.Fatalf("counts = (add %d, del %d), want (add %d, del %d)", got.Add, got.Del, add, del)
	}
}

func TestNoRecordIsSatisfied(t *testing.T) {
	e, _ := newFake()
	if !e.SatisfiedExpectations(rsKey) {
		t.Fatal("a controller with no record must be allowed to sync")
	}
	if _, ok := e.GetExpectations(rsKey); ok {
		t.Fatal("SatisfiedExpectations must not create a record")
	}
}

func TestTransitions(t *testing.T) {
	type step struct {
		name      string
		do        func(e *expectations.ControllerExpectations)
		add, del  int
		satisfied bool
	}
	create := func(n int) func(*expectations.ControllerExpectations) {
		return func(e *expectations.ControllerExpectations) { e.ExpectCreations(rsKey, n) }
	}
	del := func(n int) func(*expectations.ControllerExpectations) {
		return func(e *expectations.ControllerExpectations) { e.ExpectDeletions(rsKey, n) }
	}
	created := func(e *expectations.ControllerExpectations) { e.CreationObserved(rsKey) }
	deleted := func(e *expectations.ControllerExpectations) { e.DeletionObserved(rsKey) }
	raise := func(a, d int) func(*expectations.ControllerExpectations) {
		return func(e *expectations.ControllerExpectations) { e.RaiseExpectations(rsKey, a, d) }
	}
	lower := func(a, d int) func(*expectations.ControllerExpectations) {
		return func(e *expectations.ControllerExpectations) { e.LowerExpectations(rsKey, a, d) }
	}

	cases := []struct {
		name  string
		steps []step
	}{
		{"creations observed in full", []step{
			{"expect 3", create(3), 3, 0, false},
			{"observe 1", created, 2, 0, false},
			{"observe 2", created, 1, 0, false},
			{"observe 3", created, 0, 0, true},
		}},
		{"partial creation observation", []step{
			{"expect 2", create(2), 2, 0, false},
			{"observe 1", created, 1, 0, false},
		}},
		{"deletions observed in full", []step{
			{"expect 2", del(2), 0, 2, false},
			{"observe 1", deleted, 0, 1, false},
			{"observe 2", deleted, 0, 0, true},
		}},
		{"expect zero is satisfied immediately", []step{
			{"expect 0", create(0), 0, 0, true},
		}},
		{"deletion events do not satisfy creations", []step{
			{"expect 1 create", create(1), 1, 0, false},
			{"observe delete", deleted, 1, -1, false},
		}},
		{"set replaces rather than adds", []step{
			{"expect 3", create(3), 3, 0, false},
			{"expect 1 delete", del(1), 0, 1, false},
			{"observe delete", deleted, 0, 0, true},
		}},
		{"extra observations go negative and stay satisfied", []step{
			{"expect 1", create(1), 1, 0, false},
			{"observe 1", created, 0, 0, true},
			{"observe extra", created, -1, 0, true},
			{"observe extra delete", deleted, -1, -1, true},
		}},
		{"raise then lower", []step{
			{"expect 1", create(1), 1, 0, false},
			{"raise 2/1", raise(2, 1), 3, 1, false},
			{"lower 3/0", lower(3, 0), 0, 1, false},
			{"lower 0/1", lower(0, 1), 0, 0, true},
		}},
		{"raise without record creates one", []step{
			{"raise 1/0", raise(1, 0), 1, 0, false},
			{"observe", created, 0, 0, true},
		}},
		{"raise after surplus does not use surplus as credit", []step{
			{"expect 1", create(1), 1, 0, false},
			{"observe 1", created, 0, 0, true},
			{"observe extra x2", func(e *expectations.ControllerExpectations) { created(e); created(e) }, -2, 0, true},
			{"raise 1", raise(1, 0), 1, 0, false},
			{"observe", created, 0, 0, true},
		}},
		{"lower below zero", []step{
			{"expect 1/0", create(1), 1, 0, false},
			{"lower 3/2", lower(3, 2), -2, -2, true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newFake()
			for _, s := range tc.steps {
				s.do(e)
				got := mustGet(t, e, rsKey)
				if got.Add != s.add || got.Del != s.del {
					t.Fatalf("after %q: counts = (add %d, del %d), want (add %d, del %d)", s.name, got.Add, got.Del, s.add, s.del)
				}
				if sat := e.SatisfiedExpectations(rsKey); sat != s.satisfied {
					t.Fatalf("after %q: SatisfiedExpectations = %v, want %v", s.name, sat, s.satisfied)
				}
				if got.Fulfilled() != s.satisfied {
					t.Fatalf("after %q: Fulfilled = %v, want %v (no expiry in this test)", s.name, got.Fulfilled(), s.satisfied)
				}
			}
		})
	}
}

func TestObservationsWithoutRecordAreIgnored(t *testing.T) {
	e, _ := newFake()
	e.CreationObserved(rsKey)
	e.DeletionObserved(rsKey)
	e.LowerExpectations(rsKey, 5, 5)
	if _, ok := e.GetExpectations(rsKey); ok {
		t.Fatal("observing without a record must not create one")
	}
	// A later real expectation must not be pre-satisfied by those events.
	e.ExpectCreations(rsKey, 1)
	if e.SatisfiedExpectations(rsKey) {
		t.Fatal("expectation set after stray events must not be satisfied")
	}
}

func TestKeysAreIndependent(t *testing.T) {
	e, _ := newFake()
	e.ExpectCreations("ns/a", 1)
	e.ExpectCreations("ns/b", 1)
	e.CreationObserved("ns/a")
	if !e.SatisfiedExpectations("ns/a") {
		t.Fatal("ns/a should be satisfied")
	}
	if e.SatisfiedExpectations("ns/b") {
		t.Fatal("observation for ns/a leaked into ns/b")
	}
}

func TestDeleteExpectations(t *testing.T) {
	e, _ := newFake()
	e.ExpectCreations(rsKey, 2)
	e.ExpectCreations("default/other", 1)
	if e.SatisfiedExpectations(rsKey) {
		t.Fatal("precondition: should not be satisfied")
	}
	e.DeleteExpectations(rsKey)
	if _, ok := e.GetExpectations(rsKey); ok {
		t.Fatal("record still present after DeleteExpectations")
	}
	if !e.SatisfiedExpectations(rsKey) {
		t.Fatal("deleted record must read as satisfied")
	}
	if e.SatisfiedExpectations("default/other") {
		t.Fatal("DeleteExpectations removed an unrelated record")
	}
	e.DeleteExpectations("default/missing") // must not panic
}

func TestExpiry(t *testing.T) {
	cases := []struct {
		name    string
		opts    []expectations.Option
		wantTTL time.Duration
	}{
		{"default ttl", nil, expectations.DefaultTTL},
		{"custom ttl", []expectations.Option{expectations.WithTTL(30 * time.Second)}, 30 * time.Second},
		{"non-positive ttl falls back to default", []expectations.Option{expectations.WithTTL(0)}, expectations.DefaultTTL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := newFake(tc.opts...)
			e.ExpectCreations(rsKey, 1)
			if ts := mustGet(t, e, rsKey).Timestamp; !ts.Equal(epoch) {
				t.Fatalf("timestamp = %v, want fake clock time %v", ts, epoch)
			}
			clk.SetTime(epoch.Add(tc.wantTTL))
			if e.SatisfiedExpectations(rsKey) {
				t.Fatal("record exactly TTL old must not be expired yet")
			}
			clk.SetTime(epoch.Add(tc.wantTTL + time.Nanosecond))
			if !e.SatisfiedExpectations(rsKey) {
				t.Fatal("record older than TTL must read as satisfied")
			}
			// Expiry does not rewrite the counts; the record is simply trusted less.
			assertCounts(t, mustGet(t, e, rsKey), 1, 0)

			// A new round of expectations restarts the clock.
			e.ExpectCreations(rsKey, 1)
			if e.SatisfiedExpectations(rsKey) {
				t.Fatal("fresh expectations after expiry must not be satisfied")
			}
		})
	}
}

func TestRaiseRestartsTTL(t *testing.T) {
	e, clk := newFake()
	e.ExpectCreations(rsKey, 1)
	clk.SetTime(epoch.Add(expectations.DefaultTTL - time.Second))
	e.RaiseExpectations(rsKey, 1, 0)
	clk.SetTime(epoch.Add(expectations.DefaultTTL + time.Second))
	if e.SatisfiedExpectations(rsKey) {
		t.Fatal("raised expectations expired based on the original timestamp")
	}
	clk.SetTime(epoch.Add(2*expectations.DefaultTTL - time.Second + time.Nanosecond))
	if !e.SatisfiedExpectations(rsKey) {
		t.Fatal("raised expectations should expire TTL after the raise")
	}
}

func TestGetExpectationsReturnsCopy(t *testing.T) {
	e, _ := newFake()
	e.ExpectCreations(rsKey, 2)
	got := mustGet(t, e, rsKey)
	got.Add = 0
	assertCounts(t, mustGet(t, e, rsKey), 2, 0)
}

func TestConcurrentObservers(t *testing.T) {
	const (
		expected  = 100
		observers = 60
		keys      = 4
	)
	e, _ := newFake()
	ctrlKey := func(i int) string { return "ns/ctrl-" + string(rune('a'+i)) }
	for k := 0; k < keys; k++ {
		e.SetExpectations(ctrlKey(k), expected, expected)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := 0; k < keys; k++ {
		for i := 0; i < observers; i++ {
			wg.Add(3)
			go func() { defer wg.Done(); <-start; e.CreationObserved(ctrlKey(k)) }()
			go func() { defer wg.Done(); <-start; e.DeletionObserved(ctrlKey(k)) }()
			go func() { defer wg.Done(); <-start; _ = e.SatisfiedExpectations(ctrlKey(k)) }()
		}
	}
	close(start)
	wg.Wait()
	for k := 0; k < keys; k++ {
		assertCounts(t, mustGet(t, e, ctrlKey(k)), expected-observers, expected-observers)
		if e.SatisfiedExpectations(ctrlKey(k)) {
			t.Fatalf("%s satisfied with observations outstanding", ctrlKey(k))
		}
	}
}

// Both implementations serve the same read-side code in informer handlers and
// sync loops.
var _ interface {
	GetExpectations(string) (expectations.Expectations, bool)
	SatisfiedExpectations(string) bool
	DeleteExpectations(string)
} = (*expectations.UIDTrackingControllerExpectations)(nil)
