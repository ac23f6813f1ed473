package bench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// RequestKey is one series of the API server's apiserver_request_total, summed over response
// codes, scopes, versions and components.
type RequestKey struct {
	Group, Resource, Subresource, Verb string
}

// Path is resource[/subresource], prefixed by the group unless it is the core group:
// "pods/status", "apps/replicasets", "apps.workload.dev/tapps/status".
func (k RequestKey) Path() string {
	p := k.Resource
	if k.Subresource != "" {
		p += "/" + k.Subresource
	}
	if k.Group != "" {
		p = k.Group + "/" + p
	}
	return p
}

func (k RequestKey) String() string { return k.Verb + " " + k.Path() }

// RequestCounts are apiserver_request_total values (or deltas) by series.
type RequestCounts map[RequestKey]float64

// WriteVerbs are the apiserver_request_total verbs that change objects.
var WriteVerbs = map[string]bool{
	"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true,
}

// ParseRequestCounts reads apiserver_request_total from the API server's /metrics text.
func ParseRequestCounts(text string) (RequestCounts, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	mf := mfs["apiserver_request_total"]
	if mf == nil {
		return nil, fmt.Errorf("/metrics has no apiserver_request_total")
	}
	out := RequestCounts{}
	for _, m := range mf.GetMetric() {
		var k RequestKey
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "group":
				k.Group = l.GetValue()
			case "resource":
				k.Resource = l.GetValue()
			case "subresource":
				k.Subresource = l.GetValue()
			case "verb":
				k.Verb = l.GetValue()
			}
		}
		out[k] += m.GetCounter().GetValue()
	}
	return out, nil
}

// Sub returns c - before for every series whose difference is not zero.
func (c RequestCounts) Sub(before RequestCounts) RequestCounts {
	out := RequestCounts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Writes keeps the write verbs only.
func (c RequestCounts) Writes() RequestCounts {
	out := RequestCounts{}
	for k, v := range c {
		if WriteVerbs[k.Verb] {
			out[k] = v
		}
	}
	return out
}

// Filter keeps the series for which keep is true.
func (c RequestCounts) Filter(keep func(RequestKey) bool) RequestCounts {
	out := RequestCounts{}
	for k, v := range c {
		if keep(k) {
			out[k] = v
		}
	}
	return out
}

// Total sums the values.
func (c RequestCounts) Total() float64 {
	var t float64
	for _, v := range c {
		t += v
	}
	return t
}

// Sorted returns the keys ordered by path, then verb.
func (c RequestCounts) Sorted() []RequestKey {
	keys := make([]RequestKey, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if a, b := keys[i].Path(), keys[j].Path(); a != b {
			return a < b
		}
		return keys[i].Verb < keys[j].Verb
	})
	return keys
}

// IsPod reports whether a series is about core pods, any subresource (status, binding,
// eviction, ...).
func IsPod(k RequestKey) bool { return k.Group == "" && k.Resource == "pods" }

// IsEvent reports whether a series is about Events (core or events.k8s.io).
func IsEvent(k RequestKey) bool {
	return k.Resource == "events" && (k.Group == "" || k.Group == "events.k8s.io")
}

// IsControllerObject reports whether a series is about the workload objects controllers write
// besides pods: Deployments, ReplicaSets, StatefulSets, ControllerRevisions and the agent's
// TApps, UnitedDeployments and Canaries, with their subresources.
func IsControllerObject(k RequestKey) bool {
	return k.Group == "apps" || k.Group == "apps.workload.dev"
}

// Format renders counts as "VERB path N, ..." in Sorted order, with n objects for per-object
// figures when n > 0.
func (c RequestCounts) Format(n int) string {
	if len(c) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range c.Sorted() {
		s := fmt.Sprintf("%s %.0f", k, c[k])
		if n > 0 {
			s += fmt.Sprintf(" (%.2f/pod)", c[k]/float64(n))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
