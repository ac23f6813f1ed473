package promharness

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The exporter's error rate, as Prometheus computes it from the scraped counters, is the rate
// the test set, before and after a change.
func TestPrometheusScrapesExporter(t *testing.T) {
	exp := StartExporter(t, 0.25)
	prom := Start(t, exp.Addr)
	const q = `sum(rate(demo_errors_total[3s])) / sum(rate(demo_requests_total[3s]))`
	waitValue(t, prom, q, `"0.25"`)
	exp.SetErrorRate(t, 0.5)
	waitValue(t, prom, q, `"0.5"`)
}

func waitValue(t *testing.T, prom *Prometheus, q, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := prom.Query(context.Background(), q)
		if err == nil && strings.Contains(out, `"value":[`) && strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no value %s after a minute; last answer %s %v", q, want, out, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestSetErrorRateRefusesBadValues(t *testing.T) {
	exp := StartExporter(t, 0)
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		exp.SetErrorRate(ft, 1.5)
	}()
	if !ft.failed {
		t.Error("an error rate of 1.5 was accepted")
	}
}

// fakeT records a Fatal instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
