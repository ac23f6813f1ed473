package base

import (
	"context"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

func TestOneSyncOfAKeyAtATime(t *testing.T) {
	x := NewExclusive()
	again := 0
	if !x.Begin("a", func() { again++ }) {
		t.Fatal("a free key was refused")
	}
	if !x.Begin("b", func() { again++ }) {
		t.Fatal("another key was refused")
	}
	if x.Begin("a", func() { again++ }) || x.Begin("a", func() { again++ }) {
		t.Fatal("a key taken twice")
	}
	x.End("a")
	if again != 2 {
		t.Errorf("%d syncs queued again when the running one ended, want 2", again)
	}
	if !x.Begin("a", func() { again++ }) {
		t.Error("a released key was refused")
	}
}

// A wrapped sync of a key another queue's sync holds does not run; the key is added back to its
// own queue when the running sync ends.
func TestWrapQueuesAgainOnItsOwnQueue(t *testing.T) {
	x := NewExclusive()
	main := workqueue.NewTyped[Key]()
	spec := workqueue.NewTyped[Key]()
	key := Key{Namespace: "ns", Name: "a"}
	var ran []string
	syncMain := x.Wrap(main, func(context.Context, Key) error { ran = append(ran, "main"); return nil })
	syncSpec := x.Wrap(spec, func(ctx context.Context, k Key) error {
		ran = append(ran, "spec")
		// The main queue's sync of the same key, while this one runs, waits.
		return syncMain(ctx, k)
	})
	if err := syncSpec(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 1 || ran[0] != "spec" {
		t.Fatalf("ran %v, want only the spec sync", ran)
	}
	if main.Len() != 1 || spec.Len() != 0 {
		t.Errorf("queue lengths main %d, spec %d after the spec sync ended, want 1 and 0", main.Len(), spec.Len())
	}
}
