package metrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// Client-go REST client metrics, under the names Kubernetes components use. They are installed
// when this package is initialised (client-go's metrics.Register only takes the first call).
var (
	restRequestLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Latency of API server requests, by verb and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	}, []string{"verb", "host"})

	restRateLimiterLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Time requests waited in the client-side rate limiter (--qps, --burst), by verb and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	}, []string{"verb", "host"})

	restRequestResult = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "API server requests, by status code, method and host.",
	}, []string{"code", "method", "host"})
)

func init() {
	Registry.MustRegister(restRequestLatency, restRateLimiterLatency, restRequestResult)
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestLatency:     latencyAdapter{restRequestLatency},
		RateLimiterLatency: latencyAdapter{restRateLimiterLatency},
		RequestResult:      resultAdapter{restRequestResult},
	})
}

type latencyAdapter struct{ m *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.m.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{ m *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.m.WithLabelValues(code, method, host).Inc()
}
