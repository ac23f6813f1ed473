// Package textwidth fits the plugin's text output to a terminal: the width to fit, and lines cut
// or wrapped to it. Widths count runes: the plugin prints no double-width characters of its own
// (docs/plugin-verbs.md, "Output width").
package textwidth

import (
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// Width is how many columns output to out should fit in, 0 for no limit. COLUMNS, set to a
// positive number, wins (as for GNU ls and Python's shutil): an explicit choice, which also
// holds for a pipe. Otherwise a terminal's width, and no limit for a pipe or a file, as kubectl
// never cuts what a script reads.
func Width(out io.Writer, getenv func(string) string) int {
	if n := Columns(getenv); n > 0 {
		return n
	}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// Columns is COLUMNS when set to a positive number, else 0.
func Columns(getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

// Cut shortens s to at most width runes, ending with "…" when cut; width 0 keeps s whole.
func Cut(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// Wrap breaks s into lines of at most width runes, the first as long as fits, the next ones
// indented by indent spaces (at most half the width). It breaks after "; " or ", " when that
// keeps the line at least two thirds full, else at the last space, else inside a word. Width 0
// keeps s on one line.
func Wrap(s string, width, indent int) []string {
	if width <= 0 {
		return []string{s}
	}
	pad := ""
	r := []rune(s)
	var lines []string
	for {
		room := width - len(pad)
		if len(r) <= room {
			return append(lines, pad+string(r))
		}
		cut := breakAt(r, room)
		lines = append(lines, pad+strings.TrimRight(string(r[:cut]), " "))
		for cut < len(r) && r[cut] == ' ' {
			cut++
		}
		r = r[cut:]
		pad = strings.Repeat(" ", min(indent, width/2))
	}
}

// breakAt is where a line of at most room runes of r ends (len(r) > room): the clause or word
// boundary Wrap prefers.
func breakAt(r []rune, room int) int {
	space := -1
	for i := room; i > 0; i-- {
		if r[i] != ' ' {
			continue
		}
		if space < 0 {
			space = i
		}
		if (r[i-1] == ';' || r[i-1] == ',') && i >= room*2/3 {
			return i
		}
	}
	if space > 0 {
		return space
	}
	return room
}

// Rows is how many rows of a terminal width columns wide text takes, its lines ending with
// "\n": a line longer than the width wraps onto more (width 0: one each).
func Rows(text string, width int) int {
	rows := 0
	for _, l := range strings.SplitAfter(text, "\n") {
		if !strings.HasSuffix(l, "\n") {
			continue // what follows the last newline: the cursor stays on that row
		}
		n := utf8.RuneCountInString(strings.TrimSuffix(l, "\n"))
		if width <= 0 || n <= width {
			rows++
			continue
		}
		rows += (n + width - 1) / width
	}
	return rows
}
