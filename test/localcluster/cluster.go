package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DefaultControllers are the kube-controller-manager controllers a cluster
// runs unless Options.Controllers says otherwise: the workload controllers
// this project is compared with or builds on, and what namespaces, service
// accounts and garbage collection need. The node-lifecycle and IPAM
// controllers are left out on purpose: kwok's nodes have fixed pod CIDRs and
// must never be tainted or evicted.
var DefaultControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"job-controller",
	"cronjob-controller",
	"ttl-after-finished-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	"disruption-controller",
	"resourcequota-controller",
	"pod-garbage-collector-controller",
	"endpoints-controller",
	"endpointslice-controller",
	"service-cidr-controller",
}

// Options configure a cluster. The zero value is a usable cluster.
type Options struct {
	// BinDir holds the binaries; empty means ResolveBinDir.
	BinDir string
	// CRDDir is a directory of CustomResourceDefinition manifests
	// (*.yaml, *.yml, *.json) installed once the cluster is up; empty means
	// none. See DefaultCRDDir.
	CRDDir string
	// GatewayAPI installs the Gateway API's standard-channel CRDs (HTTPRoute and the rest),
	// read from the sigs.k8s.io/gateway-api module the repository pins; see GatewayAPICRDDir.
	GatewayAPI bool
	// Autoscaling runs kube-controller-manager's HorizontalPodAutoscaler controller (synced
	// every 2 seconds) and gives the API server its aggregation layer (front-proxy certificates
	// and request-header flags), so that a test can serve a metrics API through an APIService
	// (see test/externalmetrics). Off by default: other packages need neither.
	Autoscaling bool
	// Nodes are the fake nodes; nil means DefaultNodes().
	Nodes []Node
	// PodsPerNode is each node's pod capacity; 0 means 2500, so that the
	// default six nodes hold 15000 pods.
	PodsPerNode int
	// Controllers is kube-controller-manager's --controllers; nil means
	// DefaultControllers.
	Controllers []string
	// ControllerManagerQPS and ControllerManagerBurst set
	// kube-controller-manager's client rate limit (--kube-api-qps,
	// --kube-api-burst); 0 keeps its defaults (20 and 30).
	ControllerManagerQPS   float32
	ControllerManagerBurst int
	// SchedulerQPS and SchedulerBurst set kube-scheduler's client rate limit;
	// 0 means 200 and 400, so that scheduling is not what a test measures.
	SchedulerQPS   float32
	SchedulerBurst int
	// ExtraFlags are appended to a component's command line, keyed by
	// component (Etcd, APIServer, ...); a repeated flag overrides the default.
	ExtraFlags map[string][]string
	// Dir is the working directory, created if needed and removed by Stop;
	// empty means a new temporary directory.
	Dir string
	// KeepLogsDir is where Stop moves the logs it is asked to keep; empty
	// means a new temporary directory.
	KeepLogsDir string
	// StartTimeout bounds the start once the binaries exist; 0 means 3m.
	// It is a safety net, not a performance target.
	StartTimeout time.Duration
	// Logf reports progress; nil means standard error.
	Logf func(format string, args ...any)
	// EtcdServers is an etcd already running (another cluster's, see Cluster.EtcdURL) that the
	// API server stores its objects in instead of starting an etcd of its own; empty starts one.
	// Several API servers share one etcd with a different EtcdPrefix each: a process and a
	// database fewer per control plane (see StartFleet).
	EtcdServers string
	// EtcdPrefix is the API server's --etcd-prefix; empty keeps its default (/registry).
	EtcdPrefix string
	// NoNodes starts neither kube-scheduler nor kwok and registers no node: a control plane
	// where no pod runs, such as a fleet's hub. Nodes and PodsPerNode are then ignored.
	NoNodes bool
}

// Cluster is a running control plane.
type Cluster struct {
	// Dir is the working directory: data, certificates, kubeconfigs, logs.
	Dir string
	// Kubeconfig is the path of a kubeconfig with full access.
	Kubeconfig string
	// Server is the API server's URL.
	Server string
	// Token is the bearer token in Kubeconfig.
	Token string
	// CAData is the PEM bundle that verifies the API server.
	CAData []byte
	// Nodes are the registered fake nodes.
	Nodes []Node
	// FrontProxyCAData is the PEM CA of the client certificate the API server's aggregator
	// presents to extension API servers; empty without Options.Autoscaling.
	FrontProxyCAData []byte

	opts     Options
	etcdURL  string
	apiCA    string // the API server's CA file
	binDir   string
	logDir   string
	procs    []*process
	finisher *podFinisher
	stopOnce sync.Once
	stopLogs string
	stopErr  error
}

const stateMarker = "localcluster.pid"

// Start starts a cluster and waits until it is usable: every component is
// healthy, every node is Ready, the default service account exists and the
// CRDs are Established. On error nothing is left running and the error says
// where the logs are.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Logf == nil {
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	if opts.NoNodes {
		opts.Nodes = []Node{}
	} else if opts.Nodes == nil {
		opts.Nodes = DefaultNodes()
	}
	if opts.PodsPerNode == 0 {
		opts.PodsPerNode = 2500
	}
	if opts.Controllers == nil {
		opts.Controllers = DefaultControllers
	}
	if opts.SchedulerQPS == 0 {
		opts.SchedulerQPS, opts.SchedulerBurst = 200, 400
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	sweepStaleDirs(opts.Logf)

	binDir := opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = ResolveBinDir(ctx, opts.Logf); err != nil {
			return nil, err
		}
	} else if missing := missingBinaries(binDir); missing != nil {
		return nil, fmt.Errorf("%s lacks %s", binDir, strings.Join(missing, ", "))
	}

	dir := opts.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", tempPrefix); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, Nodes: opts.Nodes, opts: opts, binDir: binDir, logDir: filepath.Join(dir, "logs")}
	if err := os.WriteFile(filepath.Join(dir, stateMarker), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}

	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := c.start(ctx); err != nil {
		logs, stopErr := c.Stop(true)
		return nil, errors.Join(fmt.Errorf("starting local cluster: %w (logs kept in %s)", err, logs), stopErr)
	}
	opts.Logf("localcluster: up in %s at %s (kubeconfig %s, logs %s)",
		time.Since(start).Round(100*time.Millisecond), c.Server, c.Kubeconfig, c.logDir)
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	for _, d := range []string{c.logDir, c.path("certs"), c.path("kwok")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	etcdPort, etcdPeerPort, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]

	admin, err := newIdentity("admin")
	if err != nil {
		return err
	}
	ids := map[string]identity{"admin": admin}
	for _, user := range []string{"system:kube-controller-manager", "system:kube-scheduler", "kwok"} {
		if ids[user], err = newIdentity(user); err != nil {
			return err
		}
	}
	if err := writeTokenFile(c.path("tokens.csv"), []identity{admin, ids["system:kube-controller-manager"], ids["system:kube-scheduler"], ids["kwok"]}); err != nil {
		return err
	}
	if err := writeServiceAccountKeys(c.path("certs", "sa.key"), c.path("certs", "sa.pub")); err != nil {
		return err
	}

	if err := c.startEtcd(ctx, etcdPort, etcdPeerPort); err != nil {
		return err
	}
	var autoscalingAPIServer, autoscalingKCM []string
	if c.opts.Autoscaling {
		if autoscalingAPIServer, autoscalingKCM, err = c.autoscalingFlags(); err != nil {
			return err
		}
	}
	certDir := c.path("certs", "apiserver")
	c.Server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	c.Token = admin.token
	etcdFlags := []string{"--etcd-servers=" + c.etcdURL}
	if c.opts.EtcdPrefix != "" {
		etcdFlags = append(etcdFlags, "--etcd-prefix="+c.opts.EtcdPrefix)
	}
	if err := c.run(APIServer, append(append(etcdFlags,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The endpoint reconcilers refuse a loopback address for the
		// kubernetes service; nothing in a kwok cluster dials it anyway.
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(apiPort),
		// No --tls-cert-file: the API server writes a self-signed CA and
		// serving certificate for 127.0.0.1 and localhost here.
		"--cert-dir="+certDir,
		"--token-auth-file="+c.path("tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.path("certs", "sa.pub"),
		"--service-account-signing-key-file="+c.path("certs", "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		// This plugin taints new nodes not-ready until the node-lifecycle
		// controller, which is not run (see DefaultControllers), lifts it.
		"--disable-admission-plugins=TaintNodesByCondition",
		"--profiling=false",
	), autoscalingAPIServer...), nil); err != nil {
		return err
	}
	caFile := filepath.Join(certDir, "apiserver.crt")
	c.apiCA = caFile
	var apiClient *http.Client
	if err := c.waitFor(ctx, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		if apiClient == nil {
			ca, err := os.ReadFile(caFile)
			if err != nil {
				return false, nil // not written yet
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return false, nil // being written
			}
			c.CAData = ca
			apiClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		}
		_, code, err := httpGet(ctx, apiClient, c.Server+"/readyz", c.Token)
		return err == nil && code == http.StatusOK, nil
	}); err != nil {
		return err
	}

	c.Kubeconfig = c.path("kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Server, c.CAData, admin); err != nil {
		return err
	}
	kcmConfig, schedConfig, kwokConfig := c.path("kube-controller-manager.kubeconfig"), c.path("kube-scheduler.kubeconfig"), c.path("kwok", "kubeconfig")
	for path, user := range map[string]string{kcmConfig: "system:kube-controller-manager", schedConfig: "system:kube-scheduler", kwokConfig: "kwok"} {
		if err := writeKubeconfig(path, c.Server, c.CAData, ids[user]); err != nil {
			return err
		}
	}

	kcmArgs := []string{
		"--kubeconfig=" + kcmConfig,
		"--authentication-kubeconfig=" + kcmConfig,
		"--authorization-kubeconfig=" + kcmConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--leader-elect=false",
		"--controllers=" + strings.Join(c.opts.Controllers, ","),
		"--service-account-private-key-file=" + c.path("certs", "sa.key"),
		"--root-ca-file=" + caFile,
		"--profiling=false",
	}
	kcmArgs = append(kcmArgs, autoscalingKCM...)
	if c.opts.ControllerManagerQPS > 0 {
		kcmArgs = append(kcmArgs, "--kube-api-qps="+strconv.FormatFloat(float64(c.opts.ControllerManagerQPS), 'f', -1, 32))
	}
	if c.opts.ControllerManagerBurst > 0 {
		kcmArgs = append(kcmArgs, "--kube-api-burst="+strconv.Itoa(c.opts.ControllerManagerBurst))
	}
	if err := c.run(ControllerManager, kcmArgs, nil); err != nil {
		return err
	}

	healthPorts := map[string]int{ControllerManager: kcmPort}
	if !c.opts.NoNodes {
		if err := c.startNodeComponents(ctx, schedPort, schedConfig, kwokConfig, ids["kwok"]); err != nil {
			return err
		}
		healthPorts[Scheduler] = schedPort
	}

	// Their serving certificates are self-signed in memory and the probe
	// stays on loopback, so verifying them would prove nothing.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for name, port := range healthPorts {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
		if err := c.waitFor(ctx, name+" /healthz", func(ctx context.Context) (bool, error) {
			_, code, err := httpGet(ctx, insecure, url, "")
			return err == nil && code == http.StatusOK, nil
		}); err != nil {
			return err
		}
	}

	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	version, err := cs.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	if err := registerNodes(ctx, cs, c.Nodes, c.opts.PodsPerNode, version.GitVersion); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "nodes Ready", func(ctx context.Context) (bool, error) {
		return nodesReady(ctx, cs, c.Nodes)
	}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "default service account", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		return err
	}
	if c.opts.CRDDir != "" {
		if err := c.InstallCRDs(ctx, c.opts.CRDDir); err != nil {
			return err
		}
	}
	if c.opts.GatewayAPI {
		dir, err := GatewayAPICRDDir(ctx)
		if err != nil {
			return err
		}
		if err := c.InstallCRDs(ctx, dir); err != nil {
			return err
		}
	}
	return nil
}

// startNodeComponents starts what makes pods run: kube-scheduler, kwok and the pod finisher.
func (c *Cluster) startNodeComponents(ctx context.Context, schedPort int, schedConfig, kwokConfig string, kwok identity) error {
	schedFile := c.path("kube-scheduler.yaml")
	if err := os.WriteFile(schedFile, []byte(schedulerConfig(schedConfig, c.opts.SchedulerQPS, c.opts.SchedulerBurst)), 0o644); err != nil {
		return err
	}
	if err := c.run(Scheduler, []string{
		"--config=" + schedFile,
		"--authentication-kubeconfig=" + schedConfig,
		"--authorization-kubeconfig=" + schedConfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--profiling=false",
	}, nil); err != nil {
		return err
	}

	if err := os.WriteFile(c.path("kwok", "kwok.yaml"), kwokConfigYAML(), 0o644); err != nil {
		return err
	}
	if err := c.run(Kwok, []string{
		"--kubeconfig=" + kwokConfig,
		"--config=" + c.path("kwok", "kwok.yaml"),
	}, []string{
		// kwok also reads $HOME/.kwok/kwok.yaml; a developer's own must not
		// change this cluster.
		"HOME=" + c.path("kwok"),
	}); err != nil {
		return err
	}
	// The kubelet's final delete of terminating pods, which kwok's stages leave out (see
	// podFinisher); under kwok's identity, as kwok's own deletes were.
	kwokClient := c.RESTConfig()
	kwokClient.BearerToken = kwok.token
	var err error
	c.finisher, err = startPodFinisher(ctx, kwokClient, c.logDir)
	return err
}

func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.Dir}, elem...)...)
}

func (c *Cluster) run(name string, args []string, env []string) error {
	args = append(args, c.opts.ExtraFlags[name]...)
	p, err := startProcess(name, filepath.Join(c.binDir, name), args, c.logDir, env)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// waitFor polls check until it returns true. It gives up early when a
// component exits, which is how a bad flag or a taken port shows.
func (c *Cluster) waitFor(ctx context.Context, what string, check func(context.Context) (bool, error)) error {
	return waitWhileRunning(ctx, what, c.procs, check)
}

// waitWhileRunning polls check until it returns true, giving up early when one of procs exits.
func waitWhileRunning(ctx context.Context, what string, procs []*process, check func(context.Context) (bool, error)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("waiting for %s: %w", what, p.exitError())
			}
		}
		ok, err := check(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}

func httpGet(ctx context.Context, client *http.Client, url, token string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode, err
}

// RESTConfig returns a new client configuration with full access. Its rate
// limit (100 QPS, burst 200) keeps test setup from being throttled; change
// it for a client whose budget matters.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.Server,
		BearerToken:     c.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
		QPS:             100,
		Burst:           200,
	}
}

// Clientset returns a typed client built from RESTConfig.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(c.RESTConfig())
}

// PIDs returns the process id of every running component by name.
func (c *Cluster) PIDs() map[string]int {
	pids := map[string]int{}
	for _, p := range c.procs {
		if !p.exited() {
			pids[p.name] = p.cmd.Process.Pid
		}
	}
	return pids
}

// LogDir is the directory of the component logs, <component>.log, while the
// cluster runs.
func (c *Cluster) LogDir() string { return c.logDir }

// APIServerMetrics returns the API server's /metrics in the Prometheus text
// format, e.g. to count apiserver_request_total by verb and resource.
func (c *Cluster) APIServerMetrics(ctx context.Context) (string, error) {
	client, err := rest.HTTPClientFor(c.RESTConfig())
	if err != nil {
		return "", err
	}
	body, code, err := httpGet(ctx, client, c.Server+"/metrics", "")
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET /metrics: HTTP %d: %.200s", code, body)
	}
	return body, err
}

// Stop stops every component (the reverse of their start order) and removes
// the working directory. With keepLogs it first moves the logs to
// Options.KeepLogsDir (or a new temporary directory) and returns that path.
// Stop may be called more than once; later calls return the first result.
func (c *Cluster) Stop(keepLogs bool) (string, error) {
	c.stopOnce.Do(func() {
		if c.finisher != nil {
			c.finisher.stop()
		}
		for i := len(c.procs) - 1; i >= 0; i-- {
			c.procs[i].stop(15 * time.Second)
		}
		var errs []error
		if keepLogs {
			dst, err := c.keepLogs()
			c.stopLogs = dst
			errs = append(errs, err)
		}
		errs = append(errs, os.RemoveAll(c.Dir))
		c.stopErr = errors.Join(errs...)
	})
	return c.stopLogs, c.stopErr
}

func (c *Cluster) keepLogs() (string, error) {
	dst := c.opts.KeepLogsDir
	if dst == "" {
		var err error
		if dst, err = os.MkdirTemp("", "kubectl-workload-logs-"); err != nil {
			return "", err
		}
	}
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(c.logDir, dst); err != nil {
		return "", err
	}
	return dst, nil
}

const tempPrefix = "kubectl-workload-cluster-"

// sweepStaleDirs removes the working directories of clusters whose owner is
// gone without cleaning up (killed by SIGKILL or a test timeout; the
// components died with it through Pdeathsig).
func sweepStaleDirs(logf func(string, ...any)) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, stateMarker))
		if err != nil {
			continue // not started yet, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || alive(pid) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			logf("localcluster: removed %s, left behind by process %d", dir, pid)
		}
	}
}
