package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
)

func TestWorkqueueMetrics(t *testing.T) {
	const name = "metrics-test"
	depth := func() float64 { return testutil.ToFloat64(workqueueDepth.WithLabelValues(name)) }
	adds := func() float64 { return testutil.ToFloat64(workqueueAdds.WithLabelValues(name)) }
	retries := func() float64 { return testutil.ToFloat64(workqueueRetries.WithLabelValues(name)) }
	depth0, adds0, retries0 := depth(), adds(), retries()

	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	if got := depth() - depth0; got != 2 {
		t.Errorf("depth grew by %v, want 2", got)
	}
	item, _ := q.Get()
	q.Forget(item)
	q.Done(item)
	if got := depth() - depth0; got != 1 {
		t.Errorf("depth after a get grew by %v, want 1", got)
	}
	if got := adds() - adds0; got != 2 {
		t.Errorf("adds grew by %v, want 2", got)
	}
	q.AddRateLimited("c") // a retry
	if got := retries() - retries0; got != 1 {
		t.Errorf("retries grew by %v, want 1", got)
	}
	families := gather(t)
	for _, m := range []string{"workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds",
		"workqueue_work_duration_seconds", "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
		"workqueue_retries_total"} {
		if !hasSeries(families[m], "name", name) {
			t.Errorf("Registry has no %s{name=%q}", m, name)
		}
	}
}

func gather(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func hasSeries(mf *dto.MetricFamily, label, value string) bool {
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return true
			}
		}
	}
	return false
}

func TestRESTClientMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if got := testutil.ToFloat64(restRequestResult.WithLabelValues("200", "GET", host)); got != 1 {
		t.Errorf("rest_client_requests_total{code=200,method=GET} = %v, want 1", got)
	}
	if got := testutil.CollectAndCount(restRequestLatency, "rest_client_request_duration_seconds"); got == 0 {
		t.Error("no request latency series")
	}
}

func TestLatencyAdapterLabels(t *testing.T) {
	latencyAdapter{restRequestLatency}.Observe(context.Background(), "PATCH", url.URL{Host: "example:6443", Path: "/api/v1/pods/x"}, time.Second)
	mf := gather(t)["rest_client_request_duration_seconds"]
	if !hasSeries(mf, "host", "example:6443") || !hasSeries(mf, "verb", "PATCH") {
		t.Fatalf("no series for the observation: %v", mf)
	}
	// The path must not become a label (unbounded cardinality).
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != "host" && l.GetName() != "verb" {
				t.Errorf("unexpected label %s", l.GetName())
			}
		}
	}
}

func TestLeaderAndSyncedGauges(t *testing.T) {
	SetLeader(true)
	if testutil.ToFloat64(leader) != 1 {
		t.Error("leader gauge not 1")
	}
	SetLeader(false)
	if testutil.ToFloat64(leader) != 0 {
		t.Error("leader gauge not 0")
	}
	SetCachesSynced(true)
	if testutil.ToFloat64(cachesSynced) != 1 {
		t.Error("synced gauge not 1")
	}
	SetCachesSynced(false)
	if n, err := testutil.GatherAndCount(Registry, "workload_agent_leader", "workload_agent_build_info"); err != nil || n != 2 {
		t.Errorf("gathered %d, %v", n, err)
	}
}

func TestReconcileMetrics(t *testing.T) {
	success := func() float64 { return testutil.ToFloat64(reconciles.WithLabelValues("metrics-test", "success")) }
	failure := func() float64 { return testutil.ToFloat64(reconciles.WithLabelValues("metrics-test", "error")) }
	s0, f0 := success(), failure()
	ObserveReconcile("metrics-test", time.Now(), nil)
	ObserveReconcile("metrics-test", time.Now(), errors.New("x"))
	if success()-s0 != 1 || failure()-f0 != 1 {
		t.Error("reconcile counters")
	}
	SetRolloutProgress("TApp", "ns", "t", 3, 2, 1)
	if testutil.ToFloat64(rolloutUpdated.WithLabelValues("TApp", "ns", "t")) != 2 {
		t.Error("rollout updated")
	}
	ForgetWorkload("TApp", "ns", "t")
	if testutil.CollectAndCount(rolloutUpdated) != 0 {
		t.Error("ForgetWorkload kept the series")
	}
}
