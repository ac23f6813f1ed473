package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCommand runs the command with args, capturing the options it would run with.
func runCommand(t *testing.T, args ...string) (*Options, string, error) {
	t.Helper()
	var got *Options
	cmd := NewCommand(func(_ context.Context, o *Options) error {
		got = o
		return nil
	})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return got, out.String(), err
}

func TestDefaults(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	o, _, err := runCommand(t)
	if err != nil {
		t.Fatalf("no flags: %v", err)
	}
	if o.QPS != 200 || o.Burst != 400 || o.Workers != 4 || !o.LeaderElect ||
		o.LeaderElectNamespace != "workload-system" || o.LeaderElectID != "workload-agent" ||
		o.LeaseDuration != 15*time.Second || o.RenewDeadline != 10*time.Second || o.RetryPeriod != 2*time.Second ||
		o.MetricsAddr != ":8080" || o.HealthAddr != ":8081" || o.Namespace != "" || o.Kubeconfig != "" ||
		strings.Join(o.EnabledControllers, ",") != "*" || o.GCPercent != 25 {
		t.Errorf("defaults: %+v", o)
	}
}

func TestLeaderElectNamespaceFromPodNamespace(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "agents")
	o, _, err := runCommand(t)
	if err != nil {
		t.Fatal(err)
	}
	if o.LeaderElectNamespace != "agents" {
		t.Errorf("leader election namespace %q, want agents from POD_NAMESPACE", o.LeaderElectNamespace)
	}
	o, _, err = runCommand(t, "--leader-elect-namespace=other")
	if err != nil {
		t.Fatal(err)
	}
	if o.LeaderElectNamespace != "other" {
		t.Errorf("the flag must win over POD_NAMESPACE, got %q", o.LeaderElectNamespace)
	}
}

func TestGoodFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, _, err := runCommand(t, "--kubeconfig", kubeconfig, "--namespace=team-a", "--qps=50.5", "--burst=100",
		"--workers=16", "--leader-elect=false", "--metrics-addr=0", "--health-addr=127.0.0.1:0",
		"--leader-elect-id=x.y", "-v=3", "--resync-period=10m", "--gc-percent=200")
	if err != nil {
		t.Fatal(err)
	}
	if o.Kubeconfig != kubeconfig || o.Namespace != "team-a" || o.QPS != 50.5 || o.Burst != 100 || o.Workers != 16 ||
		o.LeaderElect || o.MetricsAddr != "0" || o.HealthAddr != "127.0.0.1:0" || o.ResyncPeriod != 10*time.Minute || o.GCPercent != 200 {
		t.Errorf("parsed %+v", o)
	}
	// Leader election settings are not checked when leader election is off.
	if _, _, err := runCommand(t, "--leader-elect=false", "--leader-elect-namespace=Not_Valid"); err != nil {
		t.Errorf("leader election namespace checked with --leader-elect=false: %v", err)
	}
}

// writeFile writes content to a file of a test's temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProviderFileFlag: a provider file the access library reads is accepted and kept.
func TestProviderFileFlag(t *testing.T) {
	path := writeFile(t, "providers.json", `{"providers": [{"name": "test", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/token"}}]}`)
	o, _, err := runCommand(t, "--clusterprofile-provider-file", path)
	if err != nil {
		t.Fatal(err)
	}
	if o.ClusterProfileProviderFile != path {
		t.Fatalf("ClusterProfileProviderFile = %q, want %q", o.ClusterProfileProviderFile, path)
	}
}

func TestBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		flag string
	}{
		{[]string{"--qps=abc"}, "--qps"},
		{[]string{"--qps=0"}, "--qps"},
		{[]string{"--qps=-3"}, "--qps"},
		{[]string{"--burst=0"}, "--burst"},
		{[]string{"--qps=500"}, "--burst"}, // below --qps
		{[]string{"--burst=x"}, "--burst"},
		{[]string{"--status-qps=-1"}, "--status-qps"},
		{[]string{"--status-qps=500"}, "--status-burst"}, // the default burst (--burst's) below it
		{[]string{"--status-qps=50", "--status-burst=20"}, "--status-burst"},
		{[]string{"--workers=0"}, "--workers"},
		{[]string{"--workers=100000"}, "--workers"},
		{[]string{"--workers=two"}, "--workers"},
		{[]string{"--workers"}, "--workers"},
		{[]string{"--namespace=Bad_NS"}, "--namespace"},
		{[]string{"--kubeconfig=/does/not/exist"}, "--kubeconfig"},
		{[]string{"--kubeconfig=/"}, "--kubeconfig"},
		{[]string{"--leader-elect=maybe"}, "--leader-elect"},
		{[]string{"--leader-elect-namespace="}, "--leader-elect-namespace"},
		{[]string{"--leader-elect-id=UPPER"}, "--leader-elect-id"},
		{[]string{"--leader-elect-renew-deadline=20s"}, "--leader-elect-renew-deadline"},
		{[]string{"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=40s"}, "--leader-elect-lease-duration"},
		{[]string{"--leader-elect-retry-period=9s"}, "--leader-elect-renew-deadline"},
		{[]string{"--leader-elect-retry-period=0s"}, "--leader-elect-retry-period"},
		{[]string{"--leader-elect-lease-duration=soon"}, "--leader-elect-lease-duration"},
		{[]string{"--metrics-addr=8080"}, "--metrics-addr"},
		{[]string{"--metrics-addr=:99999"}, "--metrics-addr"},
		{[]string{"--health-addr=localhost"}, "--health-addr"},
		{[]string{"--health-addr=:http"}, "--health-addr"},
		{[]string{"--controllers=nope"}, "--controllers"},
		{[]string{"--controllers=*,-nope"}, "--controllers"},
		{[]string{"--resync-period=-1s"}, "--resync-period"},
		{[]string{"--resync-period=1ms"}, "--resync-period"},
		{[]string{"-v=loud"}, "--v"},
		{[]string{"--gc-percent=0"}, "--gc-percent"},
		{[]string{"--gc-percent=-1"}, "--gc-percent"},
		{[]string{"--gc-percent=off"}, "--gc-percent"},
		{[]string{"--clusterprofile-provider-file=/does/not/exist"}, "--clusterprofile-provider-file"},
		{[]string{"--clusterprofile-provider-file=" + writeFile(t, "providers.json", `{"providers": [`)}, "--clusterprofile-provider-file"},
		{[]string{"--clusterprofile-provider-file=" + writeFile(t, "providers.json", `{"providers": []}`)}, "--clusterprofile-provider-file"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			o, _, err := runCommand(t, c.args...)
			if err == nil {
				t.Fatalf("accepted: %+v", o)
			}
			if o != nil {
				t.Errorf("ran despite the error %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.flag+":") {
				t.Errorf("error %q does not name %s", msg, c.flag)
			}
			if !strings.Contains(msg, "allowed: ") {
				t.Errorf("error %q does not say what is allowed", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if code := ExitCode(err); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
		})
	}
}

func TestStatusBudget(t *testing.T) {
	for _, c := range []struct {
		args  []string
		qps   float32
		burst int
	}{
		{nil, DefaultQPS, DefaultBurst},
		{[]string{"--qps=30", "--burst=60"}, 30, 60},
		{[]string{"--status-qps=20"}, 20, DefaultBurst},
		{[]string{"--status-qps=20", "--status-burst=40"}, 20, 40},
		{[]string{"--qps=30", "--burst=60", "--status-burst=90"}, 30, 90},
	} {
		o, _, err := runCommand(t, c.args...)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if qps, burst := o.statusBudget(); qps != c.qps || burst != c.burst {
			t.Errorf("%v: status budget %v/%d, want %v/%d", c.args, qps, burst, c.qps, c.burst)
		}
	}
}

func TestUnknownFlagAndArgs(t *testing.T) {
	for _, args := range [][]string{{"--nope"}, {"extra"}} {
		_, _, err := runCommand(t, args...)
		if err == nil {
			t.Errorf("%v accepted", args)
			continue
		}
		if ExitCode(err) == 0 {
			t.Errorf("%v: exit code 0", args)
		}
	}
}

func TestControllersFlag(t *testing.T) {
	noop := func(*Context) (Controller, error) { return nil, nil }
	o := NewOptions()
	o.Registry = map[string]InitFunc{"a": noop, "b": noop, "c": noop}
	for _, c := range []struct {
		list []string
		want string
	}{
		{[]string{"*"}, "a,b,c"},
		{[]string{"b"}, "b"},
		{[]string{"c", "a"}, "a,c"},
		{[]string{"*", "-b"}, "a,c"},
		{[]string{"-b", "*"}, "a,c"},
		{nil, ""},
	} {
		o.EnabledControllers = c.list
		got, err := o.Enabled()
		if err != nil {
			t.Errorf("%v: %v", c.list, err)
			continue
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%v enables %v, want %s", c.list, got, c.want)
		}
	}
	o.EnabledControllers = []string{"d"}
	if _, err := o.Enabled(); err == nil || !strings.Contains(err.Error(), "a, b, c") {
		t.Errorf("unknown controller: %v, want the registered ones listed", err)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		o, out, err := runCommand(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if o != nil {
			t.Errorf("%v ran the agent", args)
		}
		if !strings.HasPrefix(out, "workload-agent v") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v printed %q", args, out)
		}
	}
}

func TestHelpListsEveryFlag(t *testing.T) {
	_, out, err := runCommand(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--kubeconfig", "--namespace", "--qps", "--burst", "--workers", "--leader-elect ",
		"--leader-elect-namespace", "--leader-elect-id", "--leader-elect-lease-duration", "--leader-elect-renew-deadline",
		"--leader-elect-retry-period", "--metrics-addr", "--health-addr", "--memory-limit", "--gc-percent", "--clusterprofile-provider-file", "--controllers", "--v ", "--vmodule", "--version"} {
		if !strings.Contains(out, flag) {
			t.Errorf("--help does not list %s", flag)
		}
	}
	if !strings.Contains(out, "(default 200)") || !strings.Contains(out, "(default 400)") {
		t.Errorf("--help does not show the qps/burst defaults:\n%s", out)
	}
}

func TestExitCode(t *testing.T) {
	if ExitCode(nil) != 0 || ExitCode(errors.New("x")) != 1 || ExitCode(&UsageError{errors.New("x")}) != 2 {
		t.Error("exit codes")
	}
	if ExitCode(ErrLeadershipLost) == 0 {
		t.Error("losing the lease must exit non-zero")
	}
}

func TestUserAgentCarriesIdentity(t *testing.T) {
	a, b := NewOptions(), NewOptions()
	if a.Identity == "" || a.Identity == b.Identity {
		t.Fatalf("identities %q and %q: want two different, non-empty", a.Identity, b.Identity)
	}
	ua := UserAgent(a.Identity)
	if !strings.HasPrefix(ua, Component+"/") || !strings.HasSuffix(ua, " identity/"+a.Identity) {
		t.Fatalf("UserAgent = %q, want %s/<version> ... identity/%s", ua, Component, a.Identity)
	}
	if UserAgent("") == UserAgent(a.Identity) {
		t.Fatal("UserAgent ignores the identity")
	}
}
