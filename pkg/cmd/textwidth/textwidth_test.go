package textwidth

import (
	"bytes"
	"reflect"
	"testing"
	"unicode/utf8"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// COLUMNS wins; a buffer (not a terminal) has no limit without it.
func TestWidth(t *testing.T) {
	for _, c := range []struct {
		columns string
		want    int
	}{{"", 0}, {"120", 120}, {"0", 0}, {"-3", 0}, {"wide", 0}} {
		if got := Width(&bytes.Buffer{}, env(map[string]string{"COLUMNS": c.columns})); got != c.want {
			t.Errorf("COLUMNS=%q: width %d, want %d", c.columns, got, c.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s     string
		width int
		want  string
	}{
		{"check pods-healthy Successful", 0, "check pods-healthy Successful"},
		{"check pods-healthy Successful", 29, "check pods-healthy Successful"},
		{"check pods-healthy Successful", 12, "check pods-…"},
		{"└── pod/web-0", 8, "└── pod…"},
	} {
		if got := Cut(c.s, c.width); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.width, got, c.want)
		}
	}
}

// Lines break at clause boundaries when they keep the line two thirds full, else at a space, else
// inside a word; none is longer than the width and no text is lost.
func TestWrap(t *testing.T) {
	for _, c := range []struct {
		s             string
		width, indent int
		want          []string
	}{
		{"short", 0, 2, []string{"short"}},
		{"short", 10, 2, []string{"short"}},
		{"canary/checkout Paused: batch 1 of 4, canary 1/1 available, stable 2/2 available", 40, 4, []string{
			"canary/checkout Paused: batch 1 of 4,",
			"    canary 1/1 available, stable 2/2",
			"    available"}},
		{"rolled back; aborted at step 2 (AnalysisFailed, check error-rate): check error-rate failed", 60, 4, []string{
			"rolled back; aborted at step 2 (AnalysisFailed,",
			"    check error-rate): check error-rate failed"}},
		{"rolled back; aborted at step 2 (AnalysisFailed)", 30, 2, []string{
			"rolled back; aborted at step 2",
			"  (AnalysisFailed)"}},
		{"a; bbbbbbbbbbbbbbbbbbbbbbbb cc", 20, 2, []string{
			"a;", "  bbbbbbbbbbbbbbbbbb", "  bbbbbb cc"}},
		{"{notReady:0,pods:2,ready:2}", 10, 30, []string{"{notReady:", "     0,pod", "     s:2,r", "     eady:", "     2}"}},
	} {
		got := Wrap(c.s, c.width, c.indent)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Wrap(%q, %d, %d) =\n%q\nwant\n%q", c.s, c.width, c.indent, got, c.want)
		}
		for _, l := range got {
			if c.width > 0 && utf8.RuneCountInString(l) > c.width {
				t.Errorf("line %q is wider than %d", l, c.width)
			}
		}
	}
}

// A line wider than the terminal takes more rows: what a redraw must move the cursor up over.
func TestRows(t *testing.T) {
	for _, c := range []struct {
		text  string
		width int
		want  int
	}{
		{"", 80, 0},
		{"a\nb\n", 80, 2},
		{"a\nb\n", 0, 2},
		{"\n\n", 10, 2},
		{"0123456789\n", 10, 1},
		{"0123456789a\n", 10, 2},
		{"0123456789012345678901\nx\n", 10, 4},
		{"├──────────┤\n", 6, 2},
	} {
		if got := Rows(c.text, c.width); got != c.want {
			t.Errorf("Rows(%q, %d) = %d, want %d", c.text, c.width, got, c.want)
		}
	}
}
