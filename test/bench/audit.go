package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// AuditPolicy is the kube-apiserver audit policy the benchmarks run with: every write, at the
// Metadata level (who, which object, which verb, which code), nothing for reads. apiserver_request_total
// counts writes by resource but not by client; the audit log tells which component made each
// one (the agent, kube-controller-manager's replicaset-controller, kube-scheduler, kwok, ...).
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  verbs: ["get", "list", "watch"]
- level: Metadata
`

// AuditKey is a write counted from the audit log: which client, which verb on which resource.
type AuditKey struct {
	Client string
	RequestKey
}

// AuditCounts count audited writes.
type AuditCounts struct {
	// Writes counts every audited request by client and series.
	Writes map[AuditKey]int
	// Failed counts those answered with an HTTP status of 400 or more (conflicts, not found...).
	Failed map[AuditKey]int
	// Lines is the number of complete lines read.
	Lines int
	// Answered holds, for every series of successful writes (status below 400), the times the
	// API server answered them (stageTimestamp), in log order; Latency, how long each took
	// (stageTimestamp - requestReceivedTimestamp). They make a phase's timeline: when the
	// controller's last create, the scheduler's last binding, kwok's last status write were
	// answered, and how fast.
	Answered map[AuditKey][]time.Time
	Latency  map[AuditKey]Durations
}

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmarks read.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// auditVerbs maps the audit log's verbs to apiserver_request_total's.
var auditVerbs = map[string]string{
	"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION",
}

// ReadAudit counts the writes in the audit log at path from byte offset on, and returns the
// offset after the last complete line, where the next read should start.
func ReadAudit(path string, offset int64) (AuditCounts, int64, error) {
	out := newAuditCounts()
	f, err := os.Open(path)
	if err != nil {
		return out, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return out, offset, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return out, offset, nil // an incomplete last line is read next time
		}
		if err != nil {
			return out, offset, err
		}
		offset += int64(len(line))
		out.Lines++
		var ev auditEvent
		if err := json.Unmarshal(bytes.TrimSpace(line), &ev); err != nil {
			return out, offset, fmt.Errorf("audit log %s: %w", path, err)
		}
		if ev.Stage != "ResponseComplete" && ev.Stage != "Panic" {
			continue
		}
		verb, ok := auditVerbs[ev.Verb]
		if !ok || ev.ObjectRef == nil {
			continue
		}
		k := AuditKey{Client: ClientName(ev.UserAgent, ev.User.Username), RequestKey: RequestKey{
			Group: ev.ObjectRef.APIGroup, Resource: ev.ObjectRef.Resource, Subresource: ev.ObjectRef.Subresource, Verb: verb,
		}}
		out.Writes[k]++
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
			out.Failed[k]++
		} else if !ev.StageTimestamp.IsZero() {
			out.Answered[k] = append(out.Answered[k], ev.StageTimestamp)
			if !ev.RequestReceivedTimestamp.IsZero() {
				out.Latency[k] = append(out.Latency[k], ev.StageTimestamp.Sub(ev.RequestReceivedTimestamp))
			}
		}
	}
}

func newAuditCounts() AuditCounts {
	return AuditCounts{Writes: map[AuditKey]int{}, Failed: map[AuditKey]int{},
		Answered: map[AuditKey][]time.Time{}, Latency: map[AuditKey]Durations{}}
}

// LastAnswered is when the API server answered the last successful write of the series
// matching keep (the zero time if none).
func (a AuditCounts) LastAnswered(keep func(AuditKey) bool) time.Time {
	var last time.Time
	for k, ts := range a.Answered {
		if !keep(k) {
			continue
		}
		for _, t := range ts {
			if t.After(last) {
				last = t
			}
		}
	}
	return last
}

// Latencies are the API server's latencies of the successful writes matching keep.
func (a AuditCounts) Latencies(keep func(AuditKey) bool) Durations {
	var out Durations
	for k, d := range a.Latency {
		if keep(k) {
			out = append(out, d...)
		}
	}
	return out
}

// AuditOffset is the current size of the audit log: where a measurement window starts.
func AuditOffset(path string) (int64, error) {
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// ClientName names the component behind a request from its User-Agent: the program name
// ("workload-agent", "kube-scheduler", "kwok"), and for kube-controller-manager, which gives
// each controller its own client, the controller too ("kube-controller-manager/replicaset-controller").
// Without a User-Agent the user name is used.
func ClientName(userAgent, user string) string {
	prog, rest, _ := strings.Cut(userAgent, "/")
	if prog == "" {
		if user != "" {
			return "user " + user
		}
		return "unknown"
	}
	if prog == "kube-controller-manager" {
		// kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/<commit>/<controller>
		if parts := strings.Split(rest, "/"); len(parts) >= 4 {
			return prog + "/" + strings.Join(parts[3:], "/")
		}
	}
	return prog
}

// Filter keeps the writes for which keep is true.
func (a AuditCounts) Filter(keep func(AuditKey) bool) AuditCounts {
	out := newAuditCounts()
	out.Lines = a.Lines
	for k, v := range a.Writes {
		if keep(k) {
			out.Writes[k] = v
		}
	}
	for k, v := range a.Failed {
		if keep(k) {
			out.Failed[k] = v
		}
	}
	for k, v := range a.Answered {
		if keep(k) {
			out.Answered[k] = v
		}
	}
	for k, v := range a.Latency {
		if keep(k) {
			out.Latency[k] = v
		}
	}
	return out
}

// Total is the number of writes.
func (a AuditCounts) Total() int {
	t := 0
	for _, v := range a.Writes {
		t += v
	}
	return t
}

// Clients returns the clients that made writes, by decreasing number of writes.
func (a AuditCounts) Clients() []string {
	by := map[string]int{}
	for k, v := range a.Writes {
		by[k.Client] += v
	}
	out := make([]string, 0, len(by))
	for c := range by {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if by[out[i]] != by[out[j]] {
			return by[out[i]] > by[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// ByClient returns one client's writes as RequestCounts.
func (a AuditCounts) ByClient(client string) RequestCounts {
	out := RequestCounts{}
	for k, v := range a.Writes {
		if k.Client == client {
			out[k.RequestKey] += float64(v)
		}
	}
	return out
}

// FailedByClient returns one client's failed writes as RequestCounts.
func (a AuditCounts) FailedByClient(client string) RequestCounts {
	out := RequestCounts{}
	for k, v := range a.Failed {
		if k.Client == client {
			out[k.RequestKey] += float64(v)
		}
	}
	return out
}
