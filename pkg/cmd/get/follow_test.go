package get

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// script renders each of frames in turn, then cancels.
func script(cancel context.CancelFunc, frames ...string) func(context.Context) (string, error) {
	i := 0
	return func(context.Context) (string, error) {
		if i == len(frames) {
			cancel()
			return "", nil
		}
		i++
		return frames[i-1], nil
	}
}

// To a pipe, get -w prints the tree again, after a blank line, only when it changed.
func TestFollowPrintsChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	err := follow(ctx, &out, false, 0, time.Millisecond, script(cancel, "a\nb\n", "a\nb\n", "a\nc\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\nb\n\na\nc\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// On a terminal it redraws in place: cursor up over the lines drawn, erase, draw.
func TestFollowRedrawsInPlace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	if err := follow(ctx, &out, true, 80, time.Millisecond, script(cancel, "a\nb\n", "a\nc\n")); err != nil {
		t.Fatal(err)
	}
	if want := "a\nb\n\x1b[2A\r\x1b[Ja\nc\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// A tree that can no longer be read ends the watch with its error.
func TestFollowEndsOnError(t *testing.T) {
	boom := errors.New("canaries.apps.workload.dev \"checkout\" not found")
	err := follow(context.Background(), &strings.Builder{}, false, 0, time.Millisecond, func(context.Context) (string, error) { return "", boom })
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}
}

// Under -o wide a line wider than the terminal wraps: the redraw moves up over every row.
func TestFollowRedrawCountsWrappedRows(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out strings.Builder
	wide := strings.Repeat("x", 25) + "\n"
	if err := follow(ctx, &out, true, 10, time.Millisecond, script(cancel, "a\n"+wide, "a\nb\n")); err != nil {
		t.Fatal(err)
	}
	if want := "a\n" + wide + "\x1b[4A\r\x1b[Ja\nb\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}
