package expectations_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
)

func newUIDFake(opts ...expectations.Option) (*expectations.UIDTrackingControllerExpectations, *testclock.FakePassiveClock) {
	clk := testclock.NewFakePassiveClock(epoch)
	return expectations.NewUIDTrackingControllerExpectations(append([]expectations.Option{expectations.WithClock(clk)}, opts...)...), clk
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestUIDTrackingDeletions(t *testing.T) {
	type obs struct{ ctrl, pod string }
	cases := []struct {
		name      string
		expect    []string
		observe   []obs
		wantDel   int
		wantKeys  []string
		satisfied bool
	}{
		{
			name:      "all observed once",
			expect:    []string{"ns/p1", "ns/p2"},
			observe:   []obs{{rsKey, "ns/p1"}, {rsKey, "ns/p2"}},
			wantDel:   0,
			wantKeys:  []string{},
			satisfied: true,
		},
		{
			name:      "partial",
			expect:    []string{"ns/p1", "ns/p2", "ns/p3"},
			observe:   []obs{{rsKey, "ns/p2"}},
			wantDel:   2,
			wantKeys:  []string{"ns/p1", "ns/p3"},
			satisfied: false,
		},
		{
			// Update with deletionTimestamp, then the delete event, then a
			// tombstone replay: one pod, one decrement.
			name:      "same pod observed three times lowers once",
			expect:    []string{"ns/p1", "ns/p2"},
			observe:   []obs{{rsKey, "ns/p1"}, {rsKey, "ns/p1"}, {rsKey, "ns/p1"}},
			wantDel:   1,
			wantKeys:  []string{"ns/p2"},
			satisfied: false,
		},
		{
			name:      "untracked pod is ignored",
			expect:    []string{"ns/p1"},
			observe:   []obs{{rsKey, "ns/other"}, {rsKey, "other-ns/p1"}},
			wantDel:   1,
			wantKeys:  []string{"ns/p1"},
			satisfied: false,
		},
		{
			name:      "pod observed under another controller is ignored",
			expect:    []string{"ns/p1"},
			observe:   []obs{{"default/someone-else", "ns/p1"}},
			wantDel:   1,
			wantKeys:  []string{"ns/p1"},
			satisfied: false,
		},
		{
			name:      "duplicate keys in request count once",
			expect:    []string{"ns/p1", "ns/p1"},
			observe:   []obs{{rsKey, "ns/p1"}},
			wantDel:   0,
			wantKeys:  []string{},
			satisfied: true,
		},
		{
			name:      "empty request",
			expect:    nil,
			wantDel:   0,
			wantKeys:  []string{},
			satisfied: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := newUIDFake()
			u.ExpectDeletions(rsKey, tc.expect)
			for _, o := range tc.observe {
				u.DeletionObserved(o.ctrl, o.pod)
			}
			assertCounts(t, mustGet(t, u, rsKey), 0, tc.wantDel)
			if got, want := u.GetDeletionKeys(rsKey), sets.New(tc.wantKeys...); !got.Equal(want) {
				t.Fatalf("tracked keys = %v, want %v", sets.List(got), sets.List(want))
			}
			if sat := u.SatisfiedExpectations(rsKey); sat != tc.satisfied {
				t.Fatalf("SatisfiedExpectations = %v, want %v", sat, tc.satisfied)
			}
		})
	}
}

func TestUIDTrackingDeleteExpectationsClearsKeys(t *testing.T) {
	u, _ := newUIDFake()
	u.ExpectDeletions(rsKey, []string{"ns/p1", "ns/p2"})
	u.DeleteExpectations(rsKey)
	if _, ok := u.GetExpectations(rsKey); ok {
		t.Fatal("record still present after DeleteExpectations")
	}
	if keys := u.GetDeletionKeys(rsKey); keys != nil {
		t.Fatalf("tracked keys survived DeleteExpectations: %v", sets.List(keys))
	}
	if !u.SatisfiedExpectations(rsKey) {
		t.Fatal("deleted record must read as satisfied")
	}
	// A late delete event for a pod of the removed controller must not
	// resurrect or corrupt anything.
	u.DeletionObserved(rsKey, "ns/p1")
	if _, ok := u.GetExpectations(rsKey); ok {
		t.Fatal("late DeletionObserved recreated a record")
	}
	// A recreated controller with the same key starts from its own request.
	u.ExpectDeletions(rsKey, []string{"ns/p1"})
	assertCounts(t, mustGet(t, u, rsKey), 0, 1)
}

func TestUIDTrackingNewRoundReplacesKeys(t *testing.T) {
	u, _ := newUIDFake()
	u.ExpectDeletions(rsKey, []string{"ns/p1", "ns/p2"})
	u.ExpectDeletions(rsKey, []string{"ns/p3"})
	u.DeletionObserved(rsKey, "ns/p1")
	assertCounts(t, mustGet(t, u, rsKey), 0, 1)
	u.DeletionObserved(rsKey, "ns/p3")
	if !u.SatisfiedExpectations(rsKey) {
		t.Fatal("second round should be satisfied")
	}

	u.ExpectDeletions(rsKey, []string{"ns/p4"})
	u.ExpectCreations(rsKey, 1)
	if keys := u.GetDeletionKeys(rsKey); keys.Len() != 0 {
		t.Fatalf("ExpectCreations should drop tracked delete keys, got %v", sets.List(keys))
	}
	u.DeletionObserved(rsKey, "ns/p4")
	assertCounts(t, mustGet(t, u, rsKey), 1, 0)
	u.CreationObserved(rsKey)
	if !u.SatisfiedExpectations(rsKey) {
		t.Fatal("creation round should be satisfied")
	}
}

func TestUIDTrackingExpiry(t *testing.T) {
	u, clk := newUIDFake(expectations.WithTTL(time.Minute))
	u.ExpectDeletions(rsKey, []string{"ns/p1"})
	clk.SetTime(epoch.Add(time.Minute))
	if u.SatisfiedExpectations(rsKey) {
		t.Fatal("not yet expired")
	}
	clk.SetTime(epoch.Add(time.Minute + time.Nanosecond))
	if !u.SatisfiedExpectations(rsKey) {
		t.Fatal("a lost delete event must not block the controller past the TTL")
	}
}

func TestGetDeletionKeysReturnsCopy(t *testing.T) {
	u, _ := newUIDFake()
	u.ExpectDeletions(rsKey, []string{"ns/p1"})
	u.GetDeletionKeys(rsKey).Delete("ns/p1")
	u.DeletionObserved(rsKey, "ns/p1")
	if !u.SatisfiedExpectations(rsKey) {
		t.Fatal("mutating the returned set changed the tracked keys")
	}
}

// TestDeletionThroughTombstone drives the informer-handler path: the delete
// arrives first as an update with deletionTimestamp, then as a tombstone after
// a re-list, and must be counted once.
func TestDeletionThroughTombstone(t *testing.T) {
	u, _ := newUIDFake()
	p1, p2 := pod("ns", "p1"), pod("ns", "p2")
	u.ExpectDeletions(rsKey, []string{expectations.ObjectKey(p1), expectations.ObjectKey(p2)})

	onDelete := func(obj interface{}) {
		o, err := expectations.ObjectFromDeleteEvent(obj)
		if err != nil {
			t.Fatalf("ObjectFromDeleteEvent: %v", err)
		}
		u.DeletionObserved(rsKey, expectations.ObjectKey(o))
	}

	terminating := p1.DeepCopy()
	now := metav1.NewTime(epoch)
	terminating.DeletionTimestamp = &now
	u.DeletionObserved(rsKey, expectations.ObjectKey(terminating)) // update handler
	onDelete(cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: p1})
	assertCounts(t, mustGet(t, u, rsKey), 0, 1)
	if u.SatisfiedExpectations(rsKey) {
		t.Fatal("p2 is still outstanding")
	}

	onDelete(p2)
	onDelete(&cache.DeletedFinalStateUnknown{Key: "ns/p2", Obj: p2})
	assertCounts(t, mustGet(t, u, rsKey), 0, 0)
	if !u.SatisfiedExpectations(rsKey) {
		t.Fatal("both deletions observed")
	}
}

func TestObjectFromDeleteEvent(t *testing.T) {
	p := pod("ns", "p1")
	cases := []struct {
		name    string
		in      interface{}
		wantKey string
		wantErr bool
	}{
		{"object", p, "ns/p1", false},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: p}, "ns/p1", false},
		{"tombstone pointer", &cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: p}, "ns/p1", false},
		{"tombstone with junk", cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: "junk"}, "", true},
		{"tombstone with nil", cache.DeletedFinalStateUnknown{Key: "ns/p1"}, "", true},
		{"junk", 42, "", true},
		{"nil", nil, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := expectations.ObjectFromDeleteEvent(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("expected error, got object %v", o)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got := expectations.ObjectKey(o); got != tc.wantKey {
				t.Fatalf("key = %q, want %q", got, tc.wantKey)
			}
		})
	}
}

func TestObjectKeyMatchesInformerKeys(t *testing.T) {
	for _, o := range []metav1.Object{pod("ns", "p1"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}} {
		want, err := cache.MetaNamespaceKeyFunc(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := expectations.ObjectKey(o); got != want {
			t.Fatalf("ObjectKey = %q, informer key = %q", got, want)
		}
	}
}

// TestUIDTrackingConcurrentObservers has every pod observed by two goroutines
// at once (update and delete handlers racing) and checks that each pod lowers
// the count exactly once.
func TestUIDTrackingConcurrentObservers(t *testing.T) {
	const (
		pods     = 50
		observed = 30
		dupes    = 3
	)
	u, _ := newUIDFake()
	podKeys := make([]string, pods)
	for i := range podKeys {
		podKeys[i] = fmt.Sprintf("ns/p%d", i)
	}
	u.ExpectDeletions(rsKey, podKeys)
	u.ExpectDeletions("ns/bystander", []string{"ns/x"})

	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < observed; i++ {
		for d := 0; d < dupes; d++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				u.DeletionObserved(rsKey, podKeys[i])
				_ = u.SatisfiedExpectations(rsKey)
				_ = u.GetDeletionKeys(rsKey)
			}()
		}
	}
	close(start)
	wg.Wait()

	assertCounts(t, mustGet(t, u, rsKey), 0, pods-observed)
	if got, want := u.GetDeletionKeys(rsKey), sets.New(podKeys[observed:]...); !got.Equal(want) {
		t.Fatalf("tracked keys = %v, want %v", sets.List(got), sets.List(want))
	}
	assertCounts(t, mustGet(t, u, "ns/bystander"), 0, 1)
	if u.SatisfiedExpectations(rsKey) {
		t.Fatal("unobserved pods remain")
	}
}
