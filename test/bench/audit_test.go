package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

const auditLines = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"system:kube-controller-manager"},"userAgent":"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc1234/replicaset-controller","objectRef":{"resource":"pods","namespace":"d","apiVersion":"v1"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-11-25T19:00:00.100000Z","stageTimestamp":"2026-11-25T19:00:00.350000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"system:kube-scheduler"},"userAgent":"kube-scheduler/v1.37.1 (linux/amd64) kubernetes/abc1234/scheduler","objectRef":{"resource":"pods","namespace":"d","name":"p","apiVersion":"v1","subresource":"binding"},"responseStatus":{"code":201},"requestReceivedTimestamp":"2026-11-25T19:00:01.000000Z","stageTimestamp":"2026-11-25T19:00:01.200000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"admin"},"userAgent":"workload-agent/v0.1.0","objectRef":{"resource":"pods","namespace":"t","name":"a-0","apiVersion":"v1","subresource":"status"},"responseStatus":{"code":200}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"update","user":{"username":"admin"},"userAgent":"workload-agent/v0.1.0","objectRef":{"resource":"tapps","namespace":"t","name":"a","apiGroup":"apps.workload.dev","apiVersion":"v1alpha1","subresource":"status"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-11-25T19:00:02.000000Z","stageTimestamp":"2026-11-25T19:00:09.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"get","user":{"username":"admin"},"userAgent":"workload-agent/v0.1.0","objectRef":{"resource":"pods","namespace":"t","name":"a-0","apiVersion":"v1"},"responseStatus":{"code":200}}
`

func TestReadAudit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	// The last line is being written: it must not be read yet.
	if err := os.WriteFile(path, []byte(auditLines+`{"kind":"Event","stage":"Resp`), 0o644); err != nil {
		t.Fatal(err)
	}
	a, off, err := ReadAudit(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if off != int64(len(auditLines)) {
		t.Errorf("offset %d, want %d", off, len(auditLines))
	}
	if a.Lines != 5 || a.Total() != 4 {
		t.Errorf("lines %d writes %d, want 5 and 4 (the get is not a write)", a.Lines, a.Total())
	}
	if got := a.Clients(); len(got) != 3 || got[0] != "workload-agent" {
		t.Errorf("clients %v", got)
	}
	if got := a.ByClient("kube-controller-manager/replicaset-controller").Format(0); got != "POST pods 1" {
		t.Errorf("replicaset-controller writes %q", got)
	}
	if got := a.ByClient("kube-scheduler").Format(0); got != "POST pods/binding 1" {
		t.Errorf("scheduler writes %q", got)
	}
	if got := a.FailedByClient("workload-agent").Format(0); got != "PUT apps.workload.dev/tapps/status 1" {
		t.Errorf("agent failed writes %q", got)
	}
	if got := a.Filter(func(k AuditKey) bool { return IsPod(k.RequestKey) }).Total(); got != 3 {
		t.Errorf("pod writes %d, want 3", got)
	}

	// The timeline: successful writes only (the failed status update is not answered).
	pods := func(k AuditKey) bool { return IsPod(k.RequestKey) }
	if got, want := a.LastAnswered(pods), time.Date(2026, 11, 25, 19, 0, 1, 200e6, time.UTC); !got.Equal(want) {
		t.Errorf("last pod write answered at %v, want %v", got, want)
	}
	if got := a.LastAnswered(func(k AuditKey) bool { return k.Resource == "tapps" }); !got.IsZero() {
		t.Errorf("last tapp write answered at %v, want none (it failed)", got)
	}
	creates := func(k AuditKey) bool { return pods(k) && k.Verb == "POST" && k.Subresource == "" }
	if got := a.Latencies(creates); len(got) != 1 || got[0] != 250*time.Millisecond {
		t.Errorf("create latencies %v, want [250ms]", got)
	}
	if got := a.Filter(pods).LastAnswered(pods); got.IsZero() {
		t.Errorf("Filter dropped the timeline")
	}

	// Reading on from the offset finds nothing new until the line is complete.
	b, off2, err := ReadAudit(path, off)
	if err != nil || b.Lines != 0 || off2 != off {
		t.Errorf("second read: %d lines, offset %d, err %v", b.Lines, off2, err)
	}
}

func TestClientName(t *testing.T) {
	for ua, want := range map[string]string{
		"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc1234/deployment-controller": "kube-controller-manager/deployment-controller",
		"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc1234":                       "kube-controller-manager",
		"kwok/v0.8.0 (linux/amd64) kwok/abc":                                                     "kwok",
		"workload-agent/v0.1.0-dev":                                                              "workload-agent",
		"":                                                                                       "user admin",
	} {
		if got := ClientName(ua, "admin"); got != want {
			t.Errorf("ClientName(%q) = %q, want %q", ua, got, want)
		}
	}
}
