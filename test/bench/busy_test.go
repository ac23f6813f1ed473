package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// memSettle is how long the agent runs after it is ready before its memory is read: long
// enough for its first syncs of every TApp to finish.
const memSettle = 20 * time.Second

// Plugin latency targets of issue 7 (medians), reported against, never asserted.
var pluginTargets = map[string]time.Duration{"status": 100 * time.Millisecond, "get": 500 * time.Millisecond}

type memResult struct {
	rss, peak, maxSampled int64
	heapInuse             float64 // go_memstats_heap_inuse_bytes, -1 when the agent does not export it
	agentWrites           RequestCounts
}

var memResults = map[string]*memResult{}

// agentMemory reads the memory of an agent started (at window w) on a cluster whose managed
// pods are settled, once it has run for memSettle.
func (e *env) agentMemory(b *testing.B, a *agentproc.Agent, label string, w window) {
	b.Helper()
	r := &memResult{heapInuse: -1}
	deadline := time.Now().Add(memSettle)
	for time.Now().Before(deadline) {
		if rss, err := a.RSS(); err == nil {
			r.maxSampled = max(r.maxSampled, rss)
		}
		time.Sleep(time.Second)
	}
	var err error
	if r.rss, err = a.RSS(); err != nil {
		b.Fatal(err)
	}
	if r.peak, err = a.PeakRSS(); err != nil {
		b.Fatal(err)
	}
	if v, found, err := a.Sample(context.Background(), "go_memstats_heap_inuse_bytes", nil); err == nil && found {
		r.heapInuse = v
	}
	ws := e.closeWindow(b, w)
	r.agentWrites = ws.audit.ByClient("workload-agent")
	memResults[label] = r

	fmt.Printf("\n--- agent memory, %s: %d managed pods (TApp %s/%s), %s unrelated pods in the cluster\n",
		label, replicas, tappNS, appName, strings.TrimPrefix(label, "unrelated="))
	say("RSS %s after %s of running (max sampled each second %s); peak RSS since start (VmHWM) %s (target <= %s: %s)",
		MiB(r.rss), memSettle, MiB(r.maxSampled), MiB(r.peak), MiB(targetPeakRSS), Verdict(r.peak <= targetPeakRSS))
	if r.heapInuse >= 0 {
		say("Go heap in use: %s", MiB(int64(r.heapInuse)))
	}
	say("agent writes from its start to now (a settled TApp needs none): %s", r.agentWrites.Format(0))
	b.ReportMetric(float64(r.rss)/(1<<20), "RSS-MiB")
	b.ReportMetric(float64(r.peak)/(1<<20), "peak-RSS-MiB")
}

type pluginResult struct {
	cold     time.Duration
	runs     Durations
	failures int
	firstErr error
	outBytes int
	lastOut  []byte
}

var pluginResults = map[string]*pluginResult{}

// pluginTarget is a TApp the plugin reads: label names it in the results.
type pluginTarget struct{ label, ns string }

// pluginLatency runs `bin/kubectl-workload VERB tapp/app -n NS` pluginRuns times for each
// target, the targets taking turns so that they share the machine's load, after one unmeasured
// run each that fills the discovery cache (in a HOME of its own). It reports wall times from
// process start to exit, as a user at a shell sees them.
func (e *env) pluginLatency(b *testing.B, plugin, verb string, targets ...pluginTarget) {
	b.Helper()
	home := b.TempDir()
	run := func(r *pluginResult, args []string) time.Duration {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(plugin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1", "KUBECONFIG=")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil {
			r.failures++
			var ee *exec.ExitError
			if r.firstErr == nil {
				if errors.As(err, &ee) {
					r.firstErr = fmt.Errorf("exit code %d: %s", ee.ExitCode(), strings.TrimSpace(stderr.String()))
				} else {
					r.firstErr = err
				}
			}
		}
		r.lastOut = stdout.Bytes()
		return d
	}
	args := func(t pluginTarget) []string {
		return []string{verb, "tapp/" + appName, "-n", t.ns, "--kubeconfig=" + e.cluster.Kubeconfig}
	}
	res := make([]*pluginResult, len(targets))
	for i, t := range targets {
		res[i] = &pluginResult{}
		res[i].cold = run(res[i], args(t))
		res[i].failures, res[i].firstErr = 0, nil // the warm-up counts only for its time
	}
	for range pluginRuns {
		for i, t := range targets {
			res[i].runs = append(res[i].runs, run(res[i], args(t)))
		}
	}
	target := pluginTargets[verb]
	for i, t := range targets {
		r := res[i]
		r.outBytes = len(r.lastOut)
		pluginResults[t.label+"/"+verb] = r
		fmt.Printf("\n--- plugin %s, %s: kubectl workload %s (%d runs, %d bytes of output)\n",
			verb, t.label, strings.Join(args(t)[:4], " "), pluginRuns, r.outBytes)
		say("median %s, p90 %s, min %s, max %s; first run (empty discovery cache) %s; median target <= %s: %s",
			Millis(r.runs.Median()), Millis(r.runs.Percentile(90)), Millis(r.runs.Min()), Millis(r.runs.Max()), Millis(r.cold),
			Millis(target), Verdict(r.runs.Median() <= target))
		if r.failures > 0 {
			say("%d of %d runs exited non-zero; first: %v", r.failures, pluginRuns, r.firstErr)
		}
		lines := strings.Split(strings.TrimSpace(string(r.lastOut)), "\n")
		say("output (first lines of %d):", len(lines))
		for _, l := range lines[:min(len(lines), 3)] {
			say("  | %s", l)
		}
		suffix := ""
		if i > 0 {
			suffix = "-" + strings.NewReplacer(" ", "-", "=", "-").Replace(t.label[strings.LastIndex(t.label, "/")+1:])
		}
		b.ReportMetric(float64(r.runs.Median().Microseconds())/1000, "ms-median"+suffix)
		b.ReportMetric(float64(r.runs.Percentile(90).Microseconds())/1000, "ms-p90"+suffix)
	}
}
