// Command testtimes keeps `make test` readable while it records how long each package took.
//
//	go test -json ./... | testtimes -record bin/test-times/unit.txt
//	testtimes -table bin/test-times/*.txt
//
// With -record it reads `go test -json` on standard input and prints what plain `go test`
// would (the `ok`/`FAIL` lines, a failing test's log, build errors), one package's output at a
// time, written at once when the package ends: two phases of `make test` running side by side
// then never mix their lines. It appends one line per package to the record file and exits 1 if
// a package failed. With -table it prints the packages of every record file, slowest first, the
// file's base name as the phase. See docs/testing.md, "The suite's time".
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	record := flag.String("record", "", "read go test -json on stdin, print it as go test would, append per-package times to this file")
	table := flag.Bool("table", false, "print the packages of the record files given as arguments, slowest first")
	trim := flag.String("trim", "", "with -table, a prefix (the module path and a slash) cut from package paths")
	flag.Parse()
	switch {
	case *record != "" && !*table:
		f, err := os.OpenFile(*record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fail(err)
		}
		failed, err := Relay(os.Stdin, os.Stdout, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fail(err)
		}
		if failed {
			os.Exit(1)
		}
	case *table && *record == "":
		rows, err := ReadRecords(flag.Args())
		if err != nil {
			fail(err)
		}
		WriteTable(os.Stdout, rows, *trim)
	default:
		fmt.Fprintln(os.Stderr, "usage: testtimes -record FILE < go-test-json | testtimes -table FILE...")
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testtimes:", err)
	os.Exit(1)
}
