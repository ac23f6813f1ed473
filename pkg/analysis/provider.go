package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ErrInFlight says a measurement was started (or is still running) and has no value yet: a
// Job that has not finished. Nothing is recorded; measure again later.
var ErrInFlight = errors.New("measurement in flight")

// Provider takes one measurement. ordinal numbers the attempts of one check run from 1; a
// provider that starts something per measurement (a Job) names it by the ordinal, so a retry
// with the same ordinal finds what the first call started.
//
// The value is a float64 (a Prometheus scalar), a []float64 (an instant vector), a bool (a
// Job's success) or a map[string]int64 (pod health counts).
type Provider interface {
	Measure(ctx context.Context, ordinal int32) (any, error)
}

// FormatValue writes a measured value as status shows it: 0.02, [0.02,0.5], true,
// {notReady:1,pods:3}, {"status":"ok"}.
func FormatValue(v any) string {
	switch v := v.(type) {
	case float64:
		return formatFloat(v)
	case []float64:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = formatFloat(x)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]int64:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + strconv.FormatInt(v[k], 10)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case string, nil, map[string]any, []any: // a web check's JSON
		if b, err := json.Marshal(v); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
}

func formatFloat(x float64) string {
	if math.IsNaN(x) {
		return "NaN"
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}
