package status

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/textwidth"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// Display says how output is drawn: on a terminal (redrawn in place, maybe in color) or as plain
// lines for a pipe or a file.
type Display struct {
	// Terminal: the output is a terminal of Width columns and Height rows.
	Terminal      bool
	Width, Height int
	// Color: the state word is colored (only on a terminal, never when NO_COLOR is set).
	Color bool
}

// DetectDisplay looks at the output and the environment: a terminal (not TERM=dumb) is redrawn
// in place; NO_COLOR (https://no-color.org), set to anything but "", turns colors off; COLUMNS
// sets the width to fit, even for a pipe (textwidth.Width).
func DetectDisplay(out io.Writer, getenv func(string) string) Display {
	f, ok := out.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return displayFor(false, 0, 0, getenv)
	}
	w, h, err := term.GetSize(int(f.Fd()))
	if err != nil {
		w, h = 0, 0
	}
	return displayFor(true, w, h, getenv)
}

func displayFor(terminal bool, width, height int, getenv func(string) string) Display {
	columns := textwidth.Columns(getenv)
	if !terminal || getenv("TERM") == "dumb" {
		return Display{Width: columns}
	}
	d := Display{Terminal: true, Width: 80, Height: 24, Color: getenv("NO_COLOR") == ""}
	if width > 0 && height > 0 {
		d.Width, d.Height = width, height
	}
	if columns > 0 {
		d.Width = columns
	}
	return d
}

// ANSI escape sequences.
const (
	cursorUp    = "\x1b[%dA" // move the cursor up n lines
	clearBelow  = "\r\x1b[J" // to column 1, erase from the cursor to the end of the screen
	colorReset  = "\x1b[0m"
	colorRed    = "\x1b[31m"
	colorGreen  = "\x1b[32m"
	colorYellow = "\x1b[33m"
	colorCyan   = "\x1b[36m"
)

var stateColor = map[workload.RolloutState]string{
	workload.StateComplete:    colorGreen,
	workload.StatePaused:      colorYellow,
	workload.StateDegraded:    colorRed,
	workload.StateProgressing: colorCyan,
}

// line is the summary as one line: "canary/checkout Paused: batch 1 of 4, …".
func line(ref string, st workload.RolloutStatus) string {
	return ref + " " + st.Phase + ": " + st.Summary
}

// headline is the summary line wrapped to the width in at most maxLines lines (0: any number;
// the last one ends with "…" when some are left out), the lines after the first aligned under
// the summary (or at half the width, when that is nearer), and the state word colored (after
// wrapping, so that escape sequences never count as width).
func (d Display) headline(ref string, st workload.RolloutStatus, maxLines int) []string {
	prefix := ref + " " + st.Phase + ": "
	lines := textwidth.Wrap(prefix+st.Summary, d.Width, utf8.RuneCountInString(prefix))
	if maxLines > 0 && len(lines) > maxLines {
		lines = lines[:maxLines]
		last := lines[maxLines-1] + " …"
		if utf8.RuneCountInString(last) > d.Width {
			last = textwidth.Cut(lines[maxLines-1]+"  ", d.Width)
		}
		lines[maxLines-1] = last
	}
	if d.Color && strings.HasPrefix(lines[0], ref+" "+st.Phase) {
		lines[0] = ref + " " + d.paint(st, st.Phase) + lines[0][len(ref)+1+len(st.Phase):]
	}
	return lines
}

func (d Display) paint(st workload.RolloutStatus, s string) string {
	if !d.Color {
		return s
	}
	return stateColor[st.State] + s + colorReset
}

// PrintOnce prints the summary line and the progress lines under it.
func (d Display) PrintOnce(out io.Writer, ref string, st workload.RolloutStatus) error {
	var b strings.Builder
	for _, l := range d.headline(ref, st, 0) {
		b.WriteString(l + "\n")
	}
	for _, l := range st.Progress {
		// A wrapped progress line goes on under its own text.
		indent := 2 + len(l) - len(strings.TrimLeft(l, " ")) + 4
		for _, w := range textwidth.Wrap("  "+l, d.Width, indent) {
			b.WriteString(w + "\n")
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// Progress draws a followed rollout: on a terminal, the summary and progress lines redrawn in
// place (cursor up over what it drew last, erase, draw again: the scrollback gets nothing);
// otherwise one summary line each time it changes.
type Progress struct {
	Display
	out   io.Writer
	ref   string
	last  string // what was drawn last
	drawn int    // terminal lines drawn last
}

// NewProgress returns a Progress drawing ref's rollout on out.
func (d Display) NewProgress(out io.Writer, ref string) *Progress {
	return &Progress{Display: d, out: out, ref: ref}
}

// Show draws st if it differs from what was drawn last.
func (p *Progress) Show(st workload.RolloutStatus) {
	if !p.Terminal {
		line := line(p.ref, st)
		if line != p.last {
			fmt.Fprintln(p.out, line)
			p.last = line
		}
		return
	}
	lines := p.block(st)
	text := strings.Join(lines, "\n")
	if text == p.last {
		return
	}
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, cursorUp, p.drawn)
	}
	b.WriteString(clearBelow)
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	_, _ = io.WriteString(p.out, b.String())
	p.last, p.drawn = text, len(lines)
}

// block is what a terminal shows: the summary wrapped and every other line cut to the width (a
// line the terminal wraps would break the cursor arithmetic), and no more lines than fit on the
// screen (the ones that scroll off could not be redrawn).
func (p *Progress) block(st workload.RolloutStatus) []string {
	d := p.Display
	d.Width = max(p.Width-1, 10) // the last column would make some terminals wrap
	room := max(p.Height-2, 1)   // keep a row for the cursor
	// The summary leaves a row for the first progress line, and one to say how many more are
	// left out.
	lines := d.headline(p.ref, st, max(room-min(len(st.Progress), 2), 1))
	for i, l := range st.Progress {
		if len(lines) == room {
			lines[len(lines)-1] = textwidth.Cut(fmt.Sprintf("  … %d more", len(st.Progress)-i+1), d.Width)
			break
		}
		lines = append(lines, textwidth.Cut("  "+l, d.Width))
	}
	return lines
}

// lower writes a phase in words: "RolledBack" → "rolled back".
func lower(phase string) string {
	var b strings.Builder
	for i, r := range phase {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte(' ')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
