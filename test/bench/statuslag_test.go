package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// What stood between a load TApp's last pod Ready and its status complete, so that the tail of
// the status lag can be told apart by cause (bench/RESULTS.md, "Reaction and status lag").

// tailLag is the lag from which a TApp counts in the tail report.
const tailLag = time.Second

// noteLacking records, for a TApp whose pods are all Ready and whose status is not yet complete,
// what its status lacks; and whether its generation changed after its pods were Ready. w.mu held.
func (w *loadWatch) noteLacking(t *appsv1alpha1.TApp) {
	if prev, ok := w.generation[t.Name]; ok && prev != t.Generation {
		if _, ready := w.allReadyAt[t.Name]; ready {
			w.newGen[t.Name] = true
		}
	}
	w.generation[t.Name] = t.Generation
	if _, ready := w.allReadyAt[t.Name]; !ready {
		return
	}
	if _, done := w.completeAt[t.Name]; done {
		return
	}
	s, n := t.Status, int32(smallReplicas)
	if s.ObservedGeneration == t.Generation && s.Replicas == n && s.UpdatedReplicas == n && s.ReadyReplicas == n && s.AvailableReplicas == n {
		return // the complete status itself: what came before it counts
	}
	var lacks string
	switch {
	case s.ObservedGeneration != t.Generation:
		lacks = "observedGeneration"
	case s.ReadyReplicas != n || s.AvailableReplicas != n:
		lacks = "ready count"
	case s.UpdatedReplicas != n:
		lacks = "updated count"
	default:
		lacks = "replicas"
	}
	if t.Generation > 1 {
		// The load's TApps are created at generation 1: a Canary's write changed its spec.
		lacks += " (spec changed)"
	}
	w.lacking[t.Name] = lacks
}

// reportTail prints, for the TApps whose status lagged by tailLag or more, what their status
// lacked in its last event before complete ("no event": no TApp event came between the last pod
// Ready and the complete status, which was written once, late) and how many had a new generation in between.
func (w *loadWatch) reportTail() {
	w.mu.Lock()
	defer w.mu.Unlock()
	byCause := map[string]int{}
	var tail, newGen int
	for name, done := range w.completeAt {
		ready, ok := w.allReadyAt[name]
		if !ok || done.Sub(ready) < tailLag {
			continue
		}
		tail++
		cause := w.lacking[name]
		if cause == "" {
			cause = "no event"
		}
		byCause[cause]++
		if w.newGen[name] {
			newGen++
		}
	}
	var parts []string
	for cause, n := range byCause {
		parts = append(parts, fmt.Sprintf("%s %d", cause, n))
	}
	sort.Strings(parts)
	say("status lag >= %s: %d TApps; what their status lacked last before complete: %s; generation changed after the pods were Ready: %d",
		tailLag, tail, strings.Join(parts, ", "), newGen)
}

// reportAgentQueues prints the agent's status queue outcomes (workload_agent_status_sync_total)
// and, per TApp and Canary queue, its adds and how long items waited in it
// (workqueue_queue_duration_seconds), since the agent started.
func reportAgentQueues(b *testing.B, a *agentproc.Agent) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.MetricsURL+"/metrics", nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		say("agent metrics: %v", err)
		return
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		say("agent metrics: %v", err)
		return
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(text)))
	if err != nil {
		say("agent metrics: %v", err)
		return
	}
	if mf := mfs["workload_agent_status_sync_total"]; mf != nil {
		var parts []string
		for _, m := range mf.GetMetric() {
			l := labelMap(m.GetLabel())
			parts = append(parts, fmt.Sprintf("%s %s/%s %.0f", l["controller"], l["outcome"], l["handover"], m.GetCounter().GetValue()))
		}
		sort.Strings(parts)
		say("agent status syncs (outcome/handed to the main queue): %s", strings.Join(parts, ", "))
	}
	reportHistograms(mfs["workqueue_queue_duration_seconds"], "waited")
	// A status sync that finds its TApp taken by another queue's sync waits for that sync's end.
	reportHistograms(mfs["workqueue_work_duration_seconds"], "synced in")
}

// reportHistograms prints, per TApp and Canary queue, the count, mean and counts over 1 s and
// 10 s of a workqueue duration histogram.
func reportHistograms(mf *dto.MetricFamily, what string) {
	if mf == nil {
		return
	}
	for _, m := range mf.GetMetric() {
		name := labelMap(m.GetLabel())["name"]
		if !strings.HasPrefix(name, "tapp") && !strings.HasPrefix(name, "canary") {
			continue
		}
		h := m.GetHistogram()
		var over1, over10 uint64
		for _, bk := range h.GetBucket() {
			switch bk.GetUpperBound() {
			case 1:
				over1 = h.GetSampleCount() - bk.GetCumulativeCount()
			case 10:
				over10 = h.GetSampleCount() - bk.GetCumulativeCount()
			}
		}
		mean := 0.0
		if h.GetSampleCount() > 0 {
			mean = h.GetSampleSum() / float64(h.GetSampleCount())
		}
		say("agent queue %s: %d items %s %.3f s on average, %d over 1 s, %d over 10 s",
			name, h.GetSampleCount(), what, mean, over1, over10)
	}
}

func labelMap[L interface {
	GetName() string
	GetValue() string
}](ls []L) map[string]string {
	out := map[string]string{}
	for _, l := range ls {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
