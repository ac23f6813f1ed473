package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// printSummary prints every figure of the run as Markdown tables (the body of bench/RESULTS.md)
// and writes them to summary.md in the output directory.
func printSummary(e *env) {
	var s strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&s, format+"\n", args...) }
	p("Run ending %s, working tree at %s: %d CPUs (GOMAXPROCS %d), load average at the start %s, at the end %s; client QPS/burst %d/%d for kube-controller-manager and the agent; test binary flags: %s.",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), commitAtStart, runtime.NumCPU(), runtime.GOMAXPROCS(0),
		loadAtStart, loadAverage(), clientQPS, clientBurst, strings.Join(os.Args[1:], " "))
	if len(resultOrder) > 0 {
		p("")
		p("| scenario | pods | every pod Ready | status complete | pod writes/pod, all clients | controller pod writes/pod (target <= %.1f × ideal) | agent peak RSS (target <= %s) |", targetWritesPerPod, MiB(targetPeakRSS))
		p("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, name := range resultOrder {
			r := results[name]
			rss := "n/a (kube-controller-manager)"
			if r.peakRSS > 0 {
				rss = MiB(r.peakRSS)
			}
			p("| %s | %d | %s (%.1f pods/s) | %s | %.2f | %.2f, ideal %.0f: %s (%s) | %s |", name, r.pods, Secs(r.ready), float64(r.pods)/r.ready.Seconds(),
				Secs(r.complete), r.perPod(r.podWrites().Total()), r.perPod(r.controllerPodWrites().Total()), r.ideal, Verdict(r.meetsWrites()), r.controller, rss)
		}
		p("")
		p("Pod writes by verb and subresource (apiserver_request_total deltas), and by client (audit log):")
		p("")
		p("| scenario | all clients | by client |")
		p("| --- | --- | --- |")
		for _, name := range resultOrder {
			r := results[name]
			var by []string
			for _, c := range r.writes.audit.Clients() {
				if pods := r.writes.audit.ByClient(c).Filter(IsPod); len(pods) > 0 {
					by = append(by, c+": "+pods.Format(0))
				}
			}
			p("| %s | %s | %s |", name, r.podWrites().Format(0), strings.Join(by, "<br>"))
		}
		p("")
		p("Controller-object writes (apiserver_request_total deltas) and Events:")
		p("")
		p("| scenario | controller objects | events |")
		p("| --- | --- | ---: |")
		for _, name := range resultOrder {
			r := results[name]
			p("| %s | %s | %.0f |", name, r.writes.all.Filter(IsControllerObject).Format(0), r.writes.all.Filter(IsEvent).Total())
		}
	}
	if len(memResults) > 0 {
		p("")
		p("| agent memory, %d managed pods | RSS after %s | peak RSS since start (target <= %s) | Go heap in use | agent writes at start |", replicas, memSettle, MiB(targetPeakRSS))
		p("| --- | ---: | ---: | ---: | --- |")
		for _, label := range sortedKeys(memResults) {
			m := memResults[label]
			heap := "n/a"
			if m.heapInuse >= 0 {
				heap = MiB(int64(m.heapInuse))
			}
			p("| %s | %s | %s | %s | %s |", label, MiB(m.rss), MiB(m.peak), heap, m.agentWrites.Format(0))
		}
	}
	if len(pluginResults) > 0 {
		p("")
		p("| plugin, %d-instance TApp | runs | median | p90 | min | max | first run | median target | failures |", replicas)
		p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, key := range sortedKeys(pluginResults) {
			r := pluginResults[key]
			verb := key[strings.LastIndex(key, "/")+1:]
			t := pluginTargets[verb]
			p("| %s | %d | %s | %s | %s | %s | %s | %s (%s) | %d |", key, len(r.runs), Millis(r.runs.Median()), Millis(r.runs.Percentile(90)),
				Millis(r.runs.Min()), Millis(r.runs.Max()), Millis(r.cold), Millis(t), Verdict(r.runs.Median() <= t), r.failures)
		}
	}
	if len(comparisons) > 0 {
		p("")
		p("| comparison (same run) | a | b | ratio a/b | target |")
		p("| --- | ---: | ---: | ---: | --- |")
		for _, c := range comparisons {
			target := ""
			if c.target != "" {
				target = c.target + ": " + Verdict(c.meetsTarget != nil && *c.meetsTarget)
			}
			p("| %s | %s %.2f | %s %.2f | %s | %s |", c.what, c.a, c.va, c.b, c.vb, Ratio(c.va, c.vb), target)
		}
	}
	if len(agentLogErrors) > 0 {
		p("")
		for _, name := range sortedKeys(agentLogErrors) {
			p("Agent %s logged %d error lines (see agent-%s.log).", name, agentLogErrors[name], name)
		}
	}
	fmt.Printf("\n=== summary (Markdown; also in %s)\n\n%s", filepath.Join(e.outDir, "summary.md"), s.String())
	_ = os.WriteFile(filepath.Join(e.outDir, "summary.md"), []byte(s.String()), 0o644)
}

// loadAtStart and commitAtStart describe the machine and the working tree when the control plane
// was started.
var loadAtStart, commitAtStart string

// loadAverage is the 1, 5 and 15 minute load average.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// gitCommit describes the working tree the binaries were built from.
func gitCommit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--exclude=*").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
