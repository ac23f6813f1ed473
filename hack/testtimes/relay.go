package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// line is one line of a package's output and the test that printed it ("" for the package).
type line struct{ test, text string }

// pkgOutput is what a package printed so far, and how each of its tests ended.
type pkgOutput struct {
	lines []line
	ended map[string]string // test -> pass, fail or skip
}

// Relay copies the `go test -json` stream of in to out as plain `go test` prints it, and
// appends "<pass|fail|cached> <seconds> <package>" to record for each package that ran. It reports
// whether a package failed. Lines that are not JSON (go's own errors) are copied as they are.
func Relay(in io.Reader, out, record io.Writer) (failed bool, err error) {
	pkgs := map[string]*pkgOutput{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var ev event
		if b := sc.Bytes(); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &ev) != nil {
			if _, err := fmt.Fprintf(out, "%s\n", b); err != nil {
				return failed, err
			}
			continue
		}
		if ev.Action == "build-output" {
			if _, err := io.WriteString(out, ev.Output); err != nil {
				return failed, err
			}
			continue
		}
		p := pkgs[ev.Package]
		if p == nil {
			p = &pkgOutput{ended: map[string]string{}}
			pkgs[ev.Package] = p
		}
		switch {
		case ev.Action == "output":
			p.lines = append(p.lines, line{ev.Test, ev.Output})
		case ev.Test != "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			p.ended[ev.Test] = ev.Action
		case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
			delete(pkgs, ev.Package)
			if _, err := out.Write(p.plain(ev.Action == "fail")); err != nil {
				return failed, err
			}
			if ev.Action == "skip" {
				continue // no test files
			}
			failed = failed || ev.Action == "fail"
			result := ev.Action
			if p.cached() {
				result = "cached" // go test's cache answered: no time spent
			}
			if _, err := fmt.Fprintf(record, "%s %.3f %s\n", result, ev.Elapsed, ev.Package); err != nil {
				return failed, err
			}
		}
	}
	return failed, sc.Err()
}

// plain is the package's output as `go test` prints it for a package list: only the summary
// line of a package that passed; for one that failed, everything but the lines of tests that
// passed or were skipped, without the === framing that only -v prints.
func (p *pkgOutput) plain(failed bool) []byte {
	var b bytes.Buffer
	for _, l := range p.lines {
		switch {
		case !failed && l.test == "" && (strings.HasPrefix(l.text, "ok ") || strings.HasPrefix(l.text, "? ")):
			b.WriteString(l.text)
		case !failed:
		case strings.HasPrefix(l.text, "=== "):
		case l.test == "" || (p.ended[l.test] != "pass" && p.ended[l.test] != "skip"):
			b.WriteString(l.text)
		}
	}
	return b.Bytes()
}

// cached reports whether go test took the package's result from its cache ("ok … (cached)").
func (p *pkgOutput) cached() bool {
	for _, l := range p.lines {
		if l.test == "" && strings.HasPrefix(l.text, "ok ") && strings.Contains(l.text, "(cached)") {
			return true
		}
	}
	return false
}
