package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stream as `go test -json` writes it for a package that passes, one that fails (one test
// passing, one failing in a subtest), one without test files and one that does not build.
const stream = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestA"}
{"Action":"output","Package":"m/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"m/a","Test":"TestA","Output":"    a_test.go:9: noise of a passing test\n"}
{"Action":"output","Package":"m/a","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"m/a","Test":"TestA","Elapsed":0}
{"Action":"output","Package":"m/a","Output":"PASS\n"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t1.250s\n"}
{"Action":"pass","Package":"m/a","Elapsed":1.25}
{"Action":"start","Package":"m/b"}
{"Action":"output","Package":"m/b","Output":"cluster up in 4s\n"}
{"Action":"output","Package":"m/b","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"m/b","Test":"TestOK","Output":"--- PASS: TestOK (0.00s)\n"}
{"Action":"pass","Package":"m/b","Test":"TestOK","Elapsed":0}
{"Action":"output","Package":"m/b","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"m/b","Test":"TestBad/one","Output":"=== RUN   TestBad/one\n"}
{"Action":"output","Package":"m/b","Test":"TestBad/one","Output":"    b_test.go:7: got 2, want 3\n"}
{"Action":"output","Package":"m/b","Test":"TestBad","Output":"--- FAIL: TestBad (0.10s)\n"}
{"Action":"output","Package":"m/b","Test":"TestBad/one","Output":"    --- FAIL: TestBad/one (0.10s)\n"}
{"Action":"fail","Package":"m/b","Test":"TestBad/one","Elapsed":0.1}
{"Action":"fail","Package":"m/b","Test":"TestBad","Elapsed":0.1}
{"Action":"output","Package":"m/b","Output":"FAIL\n"}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t30.500s\n"}
{"Action":"fail","Package":"m/b","Elapsed":30.5}
{"Action":"start","Package":"m/c"}
{"Action":"output","Package":"m/c","Output":"?   \tm/c\t[no test files]\n"}
{"Action":"skip","Package":"m/c","Elapsed":0}
{"ImportPath":"m/d [m/d.test]","Action":"build-output","Output":"# m/d [m/d.test]\n"}
{"ImportPath":"m/d [m/d.test]","Action":"build-output","Output":"d/d_test.go:3:1: syntax error\n"}
{"ImportPath":"m/d [m/d.test]","Action":"build-fail"}
{"Action":"start","Package":"m/d"}
{"Action":"output","Package":"m/d","Output":"FAIL\tm/d [build failed]\n"}
{"Action":"fail","Package":"m/d","Elapsed":0}
{"Action":"start","Package":"m/e"}
{"Action":"output","Package":"m/e","Output":"ok  \tm/e\t(cached)\n"}
{"Action":"pass","Package":"m/e","Elapsed":0}
go: warning: not JSON
`

func TestRelayPrintsWhatGoTestPrintsAndRecordsEachPackage(t *testing.T) {
	var out, record bytes.Buffer
	failed, err := Relay(strings.NewReader(stream), &out, &record)
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("a package failed, Relay says none did")
	}
	wantOut := "ok  \tm/a\t1.250s\n" +
		"cluster up in 4s\n" +
		"    b_test.go:7: got 2, want 3\n" +
		"--- FAIL: TestBad (0.10s)\n" +
		"    --- FAIL: TestBad/one (0.10s)\n" +
		"FAIL\n" +
		"FAIL\tm/b\t30.500s\n" +
		"?   \tm/c\t[no test files]\n" +
		"# m/d [m/d.test]\n" +
		"d/d_test.go:3:1: syntax error\n" +
		"FAIL\tm/d [build failed]\n" +
		"ok  \tm/e\t(cached)\n" +
		"go: warning: not JSON\n"
	if out.String() != wantOut {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), wantOut)
	}
	wantRecord := "pass 1.250 m/a\nfail 30.500 m/b\nfail 0.000 m/d\ncached 0.000 m/e\n"
	if record.String() != wantRecord {
		t.Errorf("record:\n%s\nwant:\n%s", record.String(), wantRecord)
	}
}

func TestRelayReportsNoFailureWhenEveryPackagePasses(t *testing.T) {
	var out, record bytes.Buffer
	passing := strings.Join(strings.Split(stream, "\n")[:9], "\n") + "\n"
	failed, err := Relay(strings.NewReader(passing), &out, &record)
	if err != nil || failed {
		t.Errorf("failed %v, err %v; want neither", failed, err)
	}
}

func TestTableListsPackagesSlowestFirstWithTheirPhase(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"unit.txt": "pass 1.250 m/a\nfail 30.500 m/b\ncached 0.000 m/c\n",
		"e2e.txt":  "pass 554.000 m/test/e2e/canary\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := ReadRecords([]string{filepath.Join(dir, "unit.txt"), filepath.Join(dir, "e2e.txt")})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	WriteTable(&out, rows, "m/")
	want := "time per package, slowest first:\n" +
		"  seconds  phase        package\n" +
		"    554.0  e2e          test/e2e/canary\n" +
		"     30.5  unit   FAIL  b\n" +
		"      1.2  unit         a\n" +
		"      0.0  unit   cache c\n" +
		"    554.0  e2e    sum of its packages' times\n" +
		"     31.8  unit   sum of its packages' times\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestReadRecordsRefusesAMalformedLine(t *testing.T) {
	name := filepath.Join(t.TempDir(), "unit.txt")
	if err := os.WriteFile(name, []byte("pass m/a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRecords([]string{name}); err == nil || !strings.Contains(err.Error(), "unit.txt:1") {
		t.Errorf("err = %v; want one naming unit.txt:1", err)
	}
}
