package bench

import "testing"

const metricsBefore = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="replicasets",scope="resource",subresource="status",verb="PUT",version="v1"} 3
# HELP other_metric Something else.
# TYPE other_metric gauge
other_metric 1
`

const metricsAfter = `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 110
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 110
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 112
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 9
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="replicasets",scope="resource",subresource="status",verb="PUT",version="v1"} 13
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 5
`

func TestRequestCountsDelta(t *testing.T) {
	before, err := ParseRequestCounts(metricsBefore)
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseRequestCounts(metricsAfter)
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before).Writes()
	pods := d.Filter(IsPod)
	if got := pods.Total(); got != 304 {
		t.Errorf("pod writes = %v, want 304 (%s)", got, pods.Format(0))
	}
	if got := pods[RequestKey{Resource: "pods", Subresource: "status", Verb: "PATCH"}]; got != 104 {
		t.Errorf("PATCH pods/status = %v, want 104 (codes summed)", got)
	}
	if got := d.Filter(IsControllerObject).Format(0); got != "PUT apps/replicasets/status 10" {
		t.Errorf("controller-object writes = %q", got)
	}
	if got := d.Filter(IsEvent).Total(); got != 5 {
		t.Errorf("event writes = %v, want 5", got)
	}
	if _, ok := d[RequestKey{Resource: "pods", Verb: "LIST"}]; ok {
		t.Error("Writes kept a LIST")
	}
	if got, want := pods.Format(100), "POST pods 100 (1.00/pod), POST pods/binding 100 (1.00/pod), PATCH pods/status 104 (1.04/pod)"; got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
}

func TestParseRequestCountsMissing(t *testing.T) {
	if _, err := ParseRequestCounts("# TYPE x counter\nx 1\n"); err == nil {
		t.Error("no error for metrics without apiserver_request_total")
	}
}
