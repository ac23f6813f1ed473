package expectations

import "testing"

func TestStatusWrites(t *testing.T) {
	w := NewStatusWrites[*string]()
	cached, written := "cached", "written"

	if s, v := w.Current("ns/a", "1", &cached); s != &cached || v != "1" {
		t.Fatalf("nothing written: got %q at %q, want the cached status at 1", *s, v)
	}
	w.Wrote("ns/a", "1", "2", &written)
	// The cache still shows version 1: the write counts, on the version it produced.
	if s, v := w.Current("ns/a", "1", &cached); s != &written || v != "2" {
		t.Fatalf("cache lagging: got %q at %q, want the written status at 2", *s, v)
	}
	if s, _ := w.Current("ns/b", "1", &cached); s != &cached {
		t.Fatal("another object got the write")
	}
	// The cache caught up (or someone else wrote): the cache wins and the record goes.
	if s, v := w.Current("ns/a", "2", &cached); s != &cached || v != "2" {
		t.Fatalf("cache caught up: got %q at %q", *s, v)
	}
	if s, v := w.Current("ns/a", "1", &cached); s != &cached || v != "1" {
		t.Fatalf("record kept after the cache moved on: got %q at %q", *s, v)
	}
	w.Wrote("ns/a", "3", "4", &written)
	w.Forget("ns/a")
	if s, _ := w.Current("ns/a", "3", &cached); s != &cached {
		t.Fatal("forgotten write still counts")
	}
}

// A write over several base versions counts while the cache holds any of them.
func TestStatusWritesOverSeveralVersions(t *testing.T) {
	w := NewStatusWrites[*string]()
	cached, written := "cached", "written"
	w.WroteOver("ns/a", []string{"1", "2"}, "3", &written)
	for _, v := range []string{"1", "2"} {
		if s, nv := w.Current("ns/a", v, &cached); s != &written || nv != "3" {
			t.Fatalf("cache at %s: got %q at %q, want the written status at 3", v, *s, nv)
		}
	}
	if s, v := w.Current("ns/a", "4", &cached); s != &cached || v != "4" {
		t.Fatalf("cache past the write: got %q at %q", *s, v)
	}
	if s, _ := w.Current("ns/a", "1", &cached); s != &cached {
		t.Fatal("record kept after the cache moved on")
	}
}
