// Package metrics holds the agent's Prometheus metrics. Controllers record through the functions
// here so that every controller reports reconciles, durations, errors and rollout progress under
// the same names; the agent serves Registry on /metrics.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry is the agent's own registry (not the global default), so that tests can read it and
// nothing a library registers globally leaks onto /metrics.
var Registry = prometheus.NewRegistry()

var (
	reconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "workload_agent_reconcile_total",
		Help: "Reconciles per controller and result (success, error).",
	}, []string{"controller", "result"})

	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "workload_agent_reconcile_duration_seconds",
		Help:    "How long one reconcile took, per controller.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"controller"})

	statusSyncs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "workload_agent_status_sync_total",
		Help: "Syncs of a status queue, per controller, outcome (wrote, unchanged, skipped: a later observation's status was written first, failed) and what was handed to the main queue (none, pods, gates, revision, generation, other).",
	}, []string{"controller", "outcome", "handover"})

	rolloutDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "workload_agent_rollout_desired_replicas",
		Help: "Replicas a workload asks for.",
	}, []string{"kind", "namespace", "name"})

	rolloutUpdated = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "workload_agent_rollout_updated_replicas",
		Help: "Replicas of a workload on its desired revision (for a Canary: canary replicas).",
	}, []string{"kind", "namespace", "name"})

	rolloutReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "workload_agent_rollout_ready_replicas",
		Help: "Ready replicas of a workload.",
	}, []string{"kind", "namespace", "name"})
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		reconciles, reconcileDuration, statusSyncs, rolloutDesired, rolloutUpdated, rolloutReady,
	)
}

// ObserveReconcile records one reconcile of a controller that started at start.
func ObserveReconcile(controller string, start time.Time, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	reconciles.WithLabelValues(controller, result).Inc()
	reconcileDuration.WithLabelValues(controller).Observe(time.Since(start).Seconds())
}

// ObserveStatusSync counts one sync of a status queue: its outcome and what it handed to the
// main queue ("none" when nothing).
func ObserveStatusSync(controller, outcome, handover string) {
	statusSyncs.WithLabelValues(controller, outcome, handover).Inc()
}

// SetRolloutProgress publishes how far a workload's rollout has come.
func SetRolloutProgress(kind, namespace, name string, desired, updated, ready int32) {
	rolloutDesired.WithLabelValues(kind, namespace, name).Set(float64(desired))
	rolloutUpdated.WithLabelValues(kind, namespace, name).Set(float64(updated))
	rolloutReady.WithLabelValues(kind, namespace, name).Set(float64(ready))
}

// ForgetWorkload drops a deleted workload's series so /metrics does not grow without bound.
func ForgetWorkload(kind, namespace, name string) {
	rolloutDesired.DeleteLabelValues(kind, namespace, name)
	rolloutUpdated.DeleteLabelValues(kind, namespace, name)
	rolloutReady.DeleteLabelValues(kind, namespace, name)
}
