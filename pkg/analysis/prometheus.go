package analysis

import (
	"context"
	"fmt"
	"net/http"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// prometheusTimeout bounds one query, so an unresponsive server is an error, not a stall.
const prometheusTimeout = 10 * time.Second

// MaxSeries bounds an instant vector's length. cel-go's cost tracking costs time in proportion
// to a list's length at every step over it, so conditions over a huge vector would take minutes
// before the cost limit stopped them; a check wants an aggregate anyway.
const MaxSeries = 1000

// Prometheus measures with an instant query against a Prometheus server's HTTP API.
type Prometheus struct {
	api   promv1.API
	query string
	now   func() time.Time
}

// NewPrometheus returns a provider querying the server at address. rt may be nil
// (http.DefaultTransport).
func NewPrometheus(address, query string, rt http.RoundTripper) (*Prometheus, error) {
	c, err := promapi.NewClient(promapi.Config{Address: address, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus address %q: %v", address, err)
	}
	return &Prometheus{api: promv1.NewAPI(c), query: query, now: time.Now}, nil
}

// Measure runs the query: a scalar gives a float64, an instant vector a []float64 (empty when
// no series matched). Other result types (a range vector, a string) are errors.
func (p *Prometheus) Measure(ctx context.Context, _ int32) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, prometheusTimeout)
	defer cancel()
	val, _, _, err := p.api.Query(ctx, p.query, p.now())
	if err != nil {
		return nil, fmt.Errorf("prometheus query: %v", err)
	}
	switch val := val.(type) {
	case *model.Scalar:
		return float64(val.Value), nil
	case model.Vector:
		if len(val) > MaxSeries {
			return nil, fmt.Errorf("prometheus query returned %d series, more than %d: aggregate them in the query (sum, max, topk)", len(val), MaxSeries)
		}
		out := make([]float64, len(val))
		for i, s := range val {
			out[i] = float64(s.Value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("prometheus query returned a %s; want a scalar or an instant vector", val.Type())
}
