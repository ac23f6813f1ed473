package dashboard

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// Threshold is a bound read from a check's CEL condition, drawn as a line on its chart.
type Threshold struct {
	// Kind is "success" or "failure": which condition it comes from.
	Kind  string  `json:"kind"`
	Op    string  `json:"op"`
	Value float64 `json:"value"`
}

// comparison finds `result OP NUMBER` and `result[0] OP NUMBER` (and NUMBER OP result) in a
// condition. Conditions are CEL and may say much more; the chart shows the simple bounds it can
// read and the condition's text beside it.
var (
	resultFirst = regexp.MustCompile(`result(?:\[0\])?\s*(<=|>=|<|>|==)\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)`)
	numberFirst = regexp.MustCompile(`(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*(<=|>=|<|>|==)\s*result(?:\[0\])?\b`)
)

// mirror is the operator seen from the other side: `0.5 < result` is `result > 0.5`.
var mirror = map[string]string{"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "=="}

// Thresholds reads the numeric bounds of a check's success and failure conditions.
func Thresholds(success, failure string) []Threshold {
	var out []Threshold
	for _, c := range []struct{ kind, cond string }{{"success", success}, {"failure", failure}} {
		for _, m := range resultFirst.FindAllStringSubmatch(c.cond, -1) {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil {
				out = append(out, Threshold{Kind: c.kind, Op: m[1], Value: v})
			}
		}
		for _, m := range numberFirst.FindAllStringSubmatch(c.cond, -1) {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				out = append(out, Threshold{Kind: c.kind, Op: mirror[m[2]], Value: v})
			}
		}
	}
	return out
}

// parseValue reads a measured value as a number: "0.02", or the first element of a vector
// "[0.02,0.01]", or, with field, that member of a map such as a pod-health value
// "{notReady:1,pods:3}". Other values are not plotted as numbers.
func parseValue(s, field string) *float64 {
	s = strings.TrimSpace(s)
	if field != "" {
		m := regexp.MustCompile(`[{,]\s*"?` + regexp.QuoteMeta(field) + `"?\s*:\s*(-?[0-9.]+)`).FindStringSubmatch(s)
		if m == nil {
			return nil
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return nil
		}
		return &v
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return &v
	}
	var vec []float64
	if json.Unmarshal([]byte(s), &vec) == nil && len(vec) > 0 {
		return &vec[0]
	}
	return nil
}
