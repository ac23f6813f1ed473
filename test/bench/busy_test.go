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

// Issue 30's targets for the plugin against kubectl (medians, processes in turns), reported
// against, never asserted: status against `kubectl get tapp`, get against `kubectl get pods -l`.
var kubectlTargets = map[string]float64{"status": 0.5, "get": 0.3}

// kubectlArgs is the kubectl command a verb is compared with: reading the TApp (status), listing
// its pods (get).
func kubectlArgs(verb, ns string) []string {
	if verb == "status" {
		return []string{"get", "tapp", appName, "-n", ns}
	}
	return []string{"get", "pods", "-l", "app=" + appName, "-n", ns}
}

// processRun runs bin with args in HOME home and returns its wall time from start to exit;
// a failure is counted in r.
func processRun(r *pluginResult, home, bin string, args []string) time.Duration {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
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

// pluginLatency runs `bin/kubectl-workload VERB tapp/app -n NS` pluginRuns times for each
// target, and after each run its kubectl counterpart (kubectlArgs), the targets taking turns so
// that all share the machine's load, after one unmeasured run of each that fills the discovery
// cache (in a HOME of their own, shared by both). It reports wall times from process start to
// exit, as a user at a shell sees them, and the plugin/kubectl ratio of the medians.
func (e *env) pluginLatency(b *testing.B, plugin, kubectl, verb string, targets ...pluginTarget) {
	b.Helper()
	home := b.TempDir()
	kubeconfig := "--kubeconfig=" + e.cluster.Kubeconfig
	args := func(t pluginTarget) []string {
		return []string{verb, "tapp/" + appName, "-n", t.ns, kubeconfig}
	}
	kargs := func(t pluginTarget) []string { return append(kubectlArgs(verb, t.ns), kubeconfig) }
	res, kres := make([]*pluginResult, len(targets)), make([]*pluginResult, len(targets))
	for i, t := range targets {
		res[i], kres[i] = &pluginResult{}, &pluginResult{}
		res[i].cold = processRun(res[i], home, plugin, args(t))
		kres[i].cold = processRun(kres[i], home, kubectl, kargs(t))
		res[i].failures, res[i].firstErr = 0, nil // the warm-up counts only for its time
		kres[i].failures, kres[i].firstErr = 0, nil
	}
	for range pluginRuns {
		for i, t := range targets {
			res[i].runs = append(res[i].runs, processRun(res[i], home, plugin, args(t)))
			kres[i].runs = append(kres[i].runs, processRun(kres[i], home, kubectl, kargs(t)))
		}
	}
	for i, t := range targets {
		pluginResults[t.label+"/kubectl-"+verb] = kres[i]
		e.reportPlugin(b, verb, t, i, args(t), res[i], kres[i])
	}
}

// reportPlugin prints and records the runs of the plugin (r) and of kubectl (k) on target t,
// the i-th of its run.
func (e *env) reportPlugin(b *testing.B, verb string, t pluginTarget, i int, args []string, r, k *pluginResult) {
	b.Helper()
	target := pluginTargets[verb]
	r.outBytes = len(r.lastOut)
	pluginResults[t.label+"/"+verb] = r
	fmt.Printf("\n--- plugin %s, %s: kubectl workload %s (%d runs, %d bytes of output)\n",
		verb, t.label, strings.Join(args[:4], " "), pluginRuns, r.outBytes)
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
	ratio := float64(r.runs.Median()) / float64(k.runs.Median())
	say("kubectl %s (each run right after the plugin's): median %s, p90 %s, min %s, max %s, first run %s, %d bytes of output; "+
		"plugin/kubectl medians %.2f (target <= %.1f: %s)",
		strings.Join(kubectlArgs(verb, t.ns), " "), Millis(k.runs.Median()), Millis(k.runs.Percentile(90)), Millis(k.runs.Min()),
		Millis(k.runs.Max()), Millis(k.cold), len(k.lastOut), ratio, kubectlTargets[verb], Verdict(ratio <= kubectlTargets[verb]))
	if k.failures > 0 {
		say("kubectl: %d of %d runs exited non-zero; first: %v", k.failures, pluginRuns, k.firstErr)
	}
	suffix := ""
	if i > 0 {
		suffix = "-" + strings.NewReplacer(" ", "-", "=", "-").Replace(t.label[strings.LastIndex(t.label, "/")+1:])
	}
	b.ReportMetric(float64(r.runs.Median().Microseconds())/1000, "ms-median"+suffix)
	b.ReportMetric(float64(r.runs.Percentile(90).Microseconds())/1000, "ms-p90"+suffix)
	b.ReportMetric(ratio, "x-kubectl"+suffix)
}
