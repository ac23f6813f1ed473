package dashboard

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// maxPoints bounds each check's history: a check measuring every 10 s fills it in 83 minutes.
const maxPoints = 500

// podHealthField is the member of a pod-health measurement that is plotted: its bound,
// maxNotReady, is what usually fails a release.
const podHealthField = "notReady"

// Point is one measurement of an analysis check, as the Canary's status recorded it.
type Point struct {
	Time  time.Time `json:"t"`
	Phase string    `json:"phase"`
	Value string    `json:"value"`
	// Number is Value read as a number (the first element of a vector), nil when it is not one.
	Number *float64 `json:"v"`
}

// History keeps the measurements of every Canary's checks seen while the dashboard runs. The
// status holds only the latest ten of each check; the watch sees every status, so the
// dashboard can plot more than ten. It is kept in the dashboard process (shared by its tabs)
// and lost when it stops.
type History struct {
	mu     sync.Mutex
	checks map[string][]Point // by namespace/canary/check
}

// NewHistory returns an empty History.
func NewHistory() *History { return &History{checks: map[string][]Point{}} }

func historyKey(namespace, canary, check string) string {
	return namespace + "/" + canary + "/" + check
}

// Record merges the measurements of a Canary's status into the history, each once (by its
// time and value).
func (h *History) Record(obj *unstructured.Unstructured) {
	c, err := workload.AsCanary(obj)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	fields := map[string]string{}
	for _, a := range c.Spec.Analysis {
		if a.Provider.PodHealth != nil {
			fields[a.Name] = podHealthField
		}
	}
	for _, a := range c.Status.Analysis {
		key := historyKey(c.Namespace, c.Name, a.Name)
		points := h.checks[key]
		for _, m := range a.Measurements {
			p := Point{Time: m.MeasuredAt.Time, Phase: string(m.Phase), Value: m.Value, Number: parseValue(m.Value, fields[a.Name])}
			if !hasPoint(points, p) {
				points = insertPoint(points, p)
			}
		}
		if len(points) > maxPoints {
			points = points[len(points)-maxPoints:]
		}
		h.checks[key] = points
	}
}

func hasPoint(points []Point, p Point) bool {
	for _, q := range points {
		if q.Time.Equal(p.Time) && q.Value == p.Value && q.Phase == p.Phase {
			return true
		}
	}
	return false
}

// insertPoint keeps points in time order.
func insertPoint(points []Point, p Point) []Point {
	i := len(points)
	for i > 0 && points[i-1].Time.After(p.Time) {
		i--
	}
	points = append(points, Point{})
	copy(points[i+1:], points[i:])
	points[i] = p
	return points
}

// Points is a copy of one check's history, oldest first.
func (h *History) Points(namespace, canary, check string) []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Point(nil), h.checks[historyKey(namespace, canary, check)]...)
}
