package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/dashboard"
)

// Misuse exits 1 with one line, before anything listens or reads the cluster (golden
// transcripts in testdata/).
func TestRefusedFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"port-negative", []string{"--port", "-1"}},
		{"port-too-high", []string{"--port", "70000"}},
		{"address-not-ip", []string{"--address", "localhost"}},
		{"arguments", []string{"canary/x"}},
	} {
		res := cmdtest.Run(t, NewCmdDashboard, nil, tc.args...)
		if res.Code != 1 || len(res.Actions) != 0 {
			t.Errorf("%q: exit %d, actions %q; want exit 1 and none", tc.args, res.Code, res.Actions)
		}
		cmdtest.Golden(t, tc.name, res.Transcript())
	}
}

var urlLine = regexp.MustCompile(`^Serving the dashboard at (http://127\.0\.0\.1:[0-9]+/([A-Za-z0-9_-]{32})/) \(Ctrl-C stops it\)\n$`)

// Run prints one line with the URL and its token, listens on 127.0.0.1 on a free port, opens
// the browser unless --no-open, refuses a request without the token and serves the page with it.
func TestRunServesWithToken(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	var opened []string
	o := &Options{Address: "127.0.0.1", Namespace: cmdtest.Namespace,
		Reader:    dashboard.Reader{Dyn: cmdtest.NewDynamicClient()},
		Open:      func(url string) error { opened = append(opened, url); return nil },
		IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: io.Discard}}
	var checked bool
	o.Ready = func(url string) {
		defer cancel()
		m := urlLine.FindStringSubmatch(out.String())
		if m == nil || m[1] != url {
			t.Errorf("printed %q, want one line with the URL %s", out.String(), url)
			return
		}
		if len(opened) != 1 || opened[0] != url {
			t.Errorf("opened %q, want the URL", opened)
		}
		bare := strings.Replace(url, "/"+m[2]+"/", "/", 1)
		for u, want := range map[string]int{bare: http.StatusUnauthorized, bare + "api/list": http.StatusUnauthorized, url: http.StatusOK} {
			resp, err := http.Get(u)
			if err != nil {
				t.Errorf("GET %s: %v", u, err)
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET %s: %d, want %d", u, resp.StatusCode, want)
			}
		}
		checked = true
	}
	errc := make(chan error, 1)
	go func() { errc <- o.Run(ctx) }()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("the server never became ready")
	}
}

// A port already taken is refused in one line naming it, and nothing is printed.
func TestPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	var out bytes.Buffer
	o := &Options{Address: "127.0.0.1", Port: port, NoOpen: true, Reader: dashboard.Reader{Dyn: cmdtest.NewDynamicClient()},
		IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: io.Discard}}
	err = o.Run(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("listening on 127.0.0.1 port %d: ", port)) || strings.Contains(err.Error(), "\n") || out.Len() != 0 {
		t.Errorf("Run on a taken port: %v, printed %q; want one line naming the port and nothing printed", err, out.String())
	}
}
