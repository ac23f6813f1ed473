package analysis

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// The live server is covered by test/e2e/analysis; these pin how each answer of the HTTP API
// becomes a value.
func TestPrometheusMeasure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		want    any
		wantErr string
	}{
		{name: "scalar", status: 200, body: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0.25"]}}`, want: 0.25},
		{name: "vector", status: 200, body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[1700000000,"0.5"]},{"metric":{"a":"2"},"value":[1700000000,"2"]}]}}`, want: []float64{0.5, 2}},
		{name: "empty vector", status: 200, body: `{"status":"success","data":{"resultType":"vector","result":[]}}`, want: []float64{}},
		{name: "too many series", status: 200, body: `{"status":"success","data":{"resultType":"vector","result":[` + series(MaxSeries+1) + `]}}`, wantErr: "returned 1001 series, more than 1000"},
		{name: "matrix is refused", status: 200, body: `{"status":"success","data":{"resultType":"matrix","result":[]}}`, wantErr: "returned a matrix; want a scalar or an instant vector"},
		{name: "bad query", status: 400, body: `{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`, wantErr: "parse error at char 3"},
		{name: "server error", status: 503, body: `unavailable`, wantErr: "prometheus query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotQuery string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				gotQuery = r.Form.Get("query")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			p, err := NewPrometheus(srv.URL, "rate(errors[1m])", nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Measure(context.Background(), 1)
			if gotQuery != "rate(errors[1m])" {
				t.Errorf("server got query %q", gotQuery)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, %v; want %#v", got, err, tc.want)
			}
		})
	}
}

func TestPrometheusUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	p, err := NewPrometheus(addr, "up", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := p.Measure(context.Background(), 1); err == nil {
		t.Fatalf("a closed server gave %v and no error", v)
	}
}

func series(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"metric":{"i":"%d"},"value":[1700000000,"1"]}`, i)
	}
	return strings.Join(parts, ",")
}
