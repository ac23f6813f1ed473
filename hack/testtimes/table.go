package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Row is one package's run as a record file holds it.
type Row struct {
	Phase, Package, Result string
	Seconds                float64
}

// ReadRecords reads the record files Relay appended to; a file's base name without its
// extension is the phase of its rows.
func ReadRecords(files []string) ([]Row, error) {
	var rows []Row
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		phase := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			fields := strings.Fields(sc.Text())
			if len(fields) != 3 {
				f.Close()
				return nil, fmt.Errorf("%s:%d: want <result> <seconds> <package>, got %q", name, n, sc.Text())
			}
			secs, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %v", name, n, err)
			}
			rows = append(rows, Row{Phase: phase, Result: fields[0], Seconds: secs, Package: fields[2]})
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// WriteTable prints rows slowest first, a failed package marked FAIL, one go test's cache
// answered marked cache, and the sum per phase.
func WriteTable(w io.Writer, rows []Row, trim string) {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Seconds > rows[j].Seconds })
	sums := map[string]float64{}
	var phases []string
	fmt.Fprintln(w, "time per package, slowest first:")
	fmt.Fprintf(w, "%9s  %-6s %-5s %s\n", "seconds", "phase", "", "package")
	for _, r := range rows {
		mark := ""
		switch r.Result {
		case "fail":
			mark = "FAIL"
		case "cached":
			mark = "cache"
		}
		fmt.Fprintf(w, "%9.1f  %-6s %-5s %s\n", r.Seconds, r.Phase, mark, strings.TrimPrefix(r.Package, trim))
		if _, ok := sums[r.Phase]; !ok {
			phases = append(phases, r.Phase)
		}
		sums[r.Phase] += r.Seconds
	}
	sort.Strings(phases)
	for _, p := range phases {
		fmt.Fprintf(w, "%9.1f  %-6s sum of its packages' times\n", sums[p], p)
	}
}
