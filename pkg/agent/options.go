package agent

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/fence"
)

// Defaults of the agent's flags.
const (
	DefaultQPS                  = 200
	DefaultBurst                = 400
	DefaultWorkers              = 4
	DefaultLeaderElectNamespace = "workload-system"
	DefaultLeaderElectID        = "workload-agent"
	DefaultLeaseDuration        = 15 * time.Second
	DefaultRenewDeadline        = 10 * time.Second
	DefaultRetryPeriod          = 2 * time.Second
	DefaultMetricsAddr          = ":8080"
	DefaultHealthAddr           = ":8081"

	// DisabledAddr as --metrics-addr or --health-addr turns that endpoint off.
	DisabledAddr = "0"
	// AllControllers as an item of --controllers enables every registered controller.
	AllControllers = "*"

	// maxWorkers bounds --workers: more workers than this per controller only adds contention.
	maxWorkers = 1000
	// leaderElectionJitter is client-go's leaderelection.JitterFactor: the renew deadline must
	// exceed the retry period times this factor.
	leaderElectionJitter = 1.2
)

// Options are the agent's settings, normally from its command line (AddFlags).
type Options struct {
	// Kubeconfig is the kubeconfig file to use. Empty: in-cluster configuration, falling back to
	// $KUBECONFIG and ~/.kube/config (clientcmd's default loading rules).
	Kubeconfig string
	// Namespace scopes every informer; empty means all namespaces.
	Namespace string
	// QPS and Burst configure the client-side rate limiter of the API clients.
	QPS   float32
	Burst int
	// StatusQPS and StatusBurst configure the rate limiter of the status writes of the agent's
	// own kinds, a budget of its own (NewClients); 0: the same as QPS and Burst.
	StatusQPS   float32
	StatusBurst int
	// Workers is the number of workers per controller.
	Workers int
	// ResyncPeriod is the informer factories' default resync period; 0 disables periodic resyncs.
	ResyncPeriod time.Duration

	// LeaderElect runs leader election on a Lease; only the leader runs controllers.
	LeaderElect bool
	// LeaderElectNamespace and LeaderElectID name the Lease.
	LeaderElectNamespace string
	LeaderElectID        string
	LeaseDuration        time.Duration
	RenewDeadline        time.Duration
	RetryPeriod          time.Duration
	// Identity is this agent's leader election identity, also in its User-Agent. NewOptions
	// sets a new one (NewIdentity); empty means one is made when the election starts.
	Identity string

	// MetricsAddr and HealthAddr are the listen addresses of /metrics and of /healthz and
	// /readyz; DisabledAddr ("0") turns one off. When both are the same address one server
	// serves all three paths.
	MetricsAddr string
	HealthAddr  string
	// Profiling serves Go's profiles at /debug/pprof/ beside /metrics.
	Profiling bool
	// MemoryLimit is the Go runtime's soft memory limit: MemoryLimitAuto (also when empty), "0"
	// (none) or a quantity of bytes; $GOMEMLIMIT, when set, wins (memlimit.go).
	MemoryLimit string
	// GCPercent is the Go collector's GOGC: the heap may grow by this percentage of what is live
	// before the next collection; $GOGC, when set, wins (memlimit.go).
	GCPercent int

	// EnabledControllers is the --controllers list: names of registered controllers, "*" for all
	// of them, "-name" to disable one (useful after "*").
	EnabledControllers []string

	// Registry is the set of controllers to choose from; nil means the package's Controllers.
	// Tests use it to run a controller of their own.
	Registry map[string]InitFunc
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	leNamespace := os.Getenv("POD_NAMESPACE")
	if leNamespace == "" {
		leNamespace = DefaultLeaderElectNamespace
	}
	return &Options{
		QPS:                  DefaultQPS,
		Burst:                DefaultBurst,
		Workers:              DefaultWorkers,
		LeaderElect:          true,
		LeaderElectNamespace: leNamespace,
		LeaderElectID:        DefaultLeaderElectID,
		LeaseDuration:        DefaultLeaseDuration,
		RenewDeadline:        DefaultRenewDeadline,
		RetryPeriod:          DefaultRetryPeriod,
		Identity:             NewIdentity(),
		MetricsAddr:          DefaultMetricsAddr,
		HealthAddr:           DefaultHealthAddr,
		EnabledControllers:   []string{AllControllers},
		MemoryLimit:          MemoryLimitAuto,
		GCPercent:            DefaultGCPercent,
	}
}

// AddFlags registers the options' flags on fs, with the current values as defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Path to a kubeconfig file, to run out of cluster. Empty: the in-cluster service account, falling back to $KUBECONFIG and ~/.kube/config.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"Only watch and manage workloads in this namespace. Empty: all namespaces.")
	fs.Float32Var(&o.QPS, "qps", o.QPS,
		"Queries per second the agent may send to the API server (client-side rate limit; client-go's default is 5).")
	fs.IntVar(&o.Burst, "burst", o.Burst,
		"Burst of queries allowed above --qps (client-go's default is 10). Must be at least --qps.")
	fs.Float32Var(&o.StatusQPS, "status-qps", o.StatusQPS,
		"Queries per second of the status writes of TApps, UnitedDeployments and Canaries, a client-side budget of their own so that a workload's status never waits behind pod writes. 0: the same as --qps.")
	fs.IntVar(&o.StatusBurst, "status-burst", o.StatusBurst,
		"Burst of status writes allowed above --status-qps. 0: the same as --burst. Must be at least --status-qps.")
	fs.IntVar(&o.Workers, "workers", o.Workers,
		fmt.Sprintf("Concurrent reconcile workers per controller (1-%d).", maxWorkers))
	fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod,
		"How often informers replay their whole cache to the controllers as a safety net. 0 disables periodic resyncs.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Elect a leader on a coordination.k8s.io Lease before running controllers, so that several replicas can run with one active. Exits non-zero when leadership is lost.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace,
		"Namespace of the leader election Lease. Defaults to $POD_NAMESPACE, else \""+DefaultLeaderElectNamespace+"\".")
	fs.StringVar(&o.LeaderElectID, "leader-elect-id", o.LeaderElectID,
		"Name of the leader election Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration,
		"How long a standby waits, after the leader last renewed the Lease, before taking it over. Must exceed --leader-elect-renew-deadline. The leader stops writing 5% plus up to 1s sooner (its write fence).")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline,
		"How long the leader keeps retrying to renew the Lease before it gives up leadership (and exits). Must exceed 1.2 x --leader-elect-retry-period.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod,
		"How often candidates try to acquire or renew the Lease.")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr,
		"Address ([host]:port) to serve Prometheus metrics on at /metrics. \"0\" disables it.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling,
		"Serve Go's runtime profiles (heap, CPU, goroutines) at /debug/pprof/ on --metrics-addr.")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit,
		"Soft memory limit of the Go runtime (collect garbage harder as the process nears it): a quantity such as 200Mi, \"0\" for none, or \"auto\" for the container's (cgroup's) memory limit less 10% or 48Mi, whichever is more, none outside a limited cgroup. $GOMEMLIMIT, when set, wins.")
	fs.IntVar(&o.GCPercent, "gc-percent", o.GCPercent,
		"How far, in percent of the live heap, the Go heap may grow before the next garbage collection (the runtime's GOGC; Go's own default is 100). Lower keeps the agent's memory nearer what its caches hold, for more CPU spent collecting. $GOGC, when set, wins.")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr,
		"Address ([host]:port) to serve /healthz and /readyz on. \"0\" disables it.")
	fs.StringSliceVar(&o.EnabledControllers, "controllers", o.EnabledControllers,
		fmt.Sprintf("Controllers to run, comma separated: \"*\" for all, a name to enable one, \"-name\" to disable one. Registered: %s.", registeredList(o.registry())))
}

// FlagHelp describes the values each flag allows, for error messages about unparsable values.
var FlagHelp = map[string]string{
	"kubeconfig":                  "a path to a readable kubeconfig file, or empty",
	"namespace":                   "a namespace name (a DNS-1123 label), or empty for all namespaces",
	"qps":                         "a number greater than 0, e.g. 200",
	"burst":                       "an integer of at least 1 and at least --qps, e.g. 400",
	"status-qps":                  "0 (the same as --qps) or a number greater than 0, e.g. 200",
	"status-burst":                "0 (the same as --burst) or an integer of at least --status-qps, e.g. 400",
	"workers":                     fmt.Sprintf("an integer from 1 to %d", maxWorkers),
	"resync-period":               "a duration of 0 (disabled) or at least 1s, e.g. 10m",
	"leader-elect":                "true or false",
	"leader-elect-namespace":      "a namespace name (a DNS-1123 label)",
	"leader-elect-id":             "a Lease name (a DNS-1123 subdomain)",
	"leader-elect-lease-duration": "a duration greater than --leader-elect-renew-deadline, e.g. 15s",
	"leader-elect-renew-deadline": "a duration greater than 1.2 x --leader-elect-retry-period and less than --leader-elect-lease-duration, e.g. 10s",
	"leader-elect-retry-period":   "a positive duration, e.g. 2s",
	"metrics-addr":                "[host]:port with a port from 0 to 65535, or \"0\" to disable",
	"health-addr":                 "[host]:port with a port from 0 to 65535, or \"0\" to disable",
	"memory-limit":                "auto, 0, or a quantity of bytes of at least 1Mi, e.g. 200Mi",
	"gc-percent":                  fmt.Sprintf("an integer from %d to %d, e.g. 100", minGCPercent, maxGCPercent),
	"controllers":                 "a comma separated list of \"*\", registered controller names and \"-name\"",
	"v":                           "an integer log verbosity from 0 (default) to 10",
}

// Validate checks the options. Its error is one line naming the flag, what is wrong with the
// value and what is allowed.
func (o *Options) Validate() error {
	bad := func(flag string, value any, problem string) error {
		return fmt.Errorf("invalid value %q for --%s: %s; allowed: %s", fmt.Sprint(value), flag, problem, FlagHelp[flag])
	}
	if o.Kubeconfig != "" {
		if st, err := os.Stat(o.Kubeconfig); err != nil {
			return bad("kubeconfig", o.Kubeconfig, "cannot read it: "+oneLine(err))
		} else if st.IsDir() {
			return bad("kubeconfig", o.Kubeconfig, "it is a directory")
		}
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return bad("namespace", o.Namespace, "not a valid namespace name: "+errs[0])
		}
	}
	if !(o.QPS > 0) || o.QPS > 1e6 {
		return bad("qps", o.QPS, "out of range")
	}
	if o.Burst < 1 || float32(o.Burst) < o.QPS {
		return bad("burst", o.Burst, fmt.Sprintf("must be at least 1 and at least --qps (%v)", o.QPS))
	}
	if o.StatusQPS < 0 || o.StatusQPS > 1e6 {
		return bad("status-qps", o.StatusQPS, "out of range")
	}
	if qps, burst := o.statusBudget(); burst < 1 || float32(burst) < qps {
		return bad("status-burst", o.StatusBurst, fmt.Sprintf("must be at least 1 and at least --status-qps (%v)", qps))
	}
	if o.Workers < 1 || o.Workers > maxWorkers {
		return bad("workers", o.Workers, "out of range")
	}
	if o.ResyncPeriod < 0 || (o.ResyncPeriod > 0 && o.ResyncPeriod < time.Second) {
		return bad("resync-period", o.ResyncPeriod, "too short")
	}
	if o.LeaderElect {
		if err := o.validateLeaderElection(bad); err != nil {
			return err
		}
	}
	if err := validateAddr(o.MetricsAddr); err != nil {
		return bad("metrics-addr", o.MetricsAddr, err.Error())
	}
	if err := validateAddr(o.HealthAddr); err != nil {
		return bad("health-addr", o.HealthAddr, err.Error())
	}
	if o.MemoryLimit != MemoryLimitAuto && o.MemoryLimit != "" {
		if _, err := parseMemoryLimit(o.MemoryLimit); err != nil {
			return bad("memory-limit", o.MemoryLimit, err.Error())
		}
	}
	if o.GCPercent < minGCPercent || o.GCPercent > maxGCPercent {
		return bad("gc-percent", o.GCPercent, fmt.Sprintf("must be from %d to %d", minGCPercent, maxGCPercent))
	}
	if _, err := o.Enabled(); err != nil {
		return bad("controllers", strings.Join(o.EnabledControllers, ","), err.Error())
	}
	return nil
}

// validateLeaderElection checks the leader election flags, reported through bad as Validate does.
func (o *Options) validateLeaderElection(bad func(flag string, value any, problem string) error) error {
	if errs := validation.IsDNS1123Label(o.LeaderElectNamespace); len(errs) > 0 {
		return bad("leader-elect-namespace", o.LeaderElectNamespace, "not a valid namespace name: "+firstOr(errs, "empty"))
	}
	if errs := validation.IsDNS1123Subdomain(o.LeaderElectID); len(errs) > 0 {
		return bad("leader-elect-id", o.LeaderElectID, "not a valid Lease name: "+firstOr(errs, "empty"))
	}
	if o.RetryPeriod <= 0 {
		return bad("leader-elect-retry-period", o.RetryPeriod, "must be positive")
	}
	if float64(o.RenewDeadline) <= leaderElectionJitter*float64(o.RetryPeriod) {
		return bad("leader-elect-renew-deadline", o.RenewDeadline,
			fmt.Sprintf("must be greater than 1.2 x --leader-elect-retry-period (%v)", o.RetryPeriod))
	}
	if fence.Validity(o.LeaseDuration.Truncate(time.Second)) <= o.RetryPeriod {
		// The Lease records whole seconds, and the fence must outlast the interval between
		// two renewals or it would close while the leader renews normally.
		return bad("leader-elect-lease-duration", o.LeaseDuration,
			fmt.Sprintf("its whole seconds less the fencing margins (see docs/fencing.md) must exceed --leader-elect-retry-period (%v)", o.RetryPeriod))
	}
	if o.LeaseDuration <= o.RenewDeadline {
		if o.LeaseDuration == DefaultLeaseDuration {
			// Most likely the renew deadline was raised on its own: blame it.
			return bad("leader-elect-renew-deadline", o.RenewDeadline,
				fmt.Sprintf("must be less than --leader-elect-lease-duration (%v)", o.LeaseDuration))
		}
		return bad("leader-elect-lease-duration", o.LeaseDuration,
			fmt.Sprintf("must be greater than --leader-elect-renew-deadline (%v)", o.RenewDeadline))
	}
	return nil
}

// Enabled returns the names of the controllers to run, sorted, from EnabledControllers and the
// registry.
func (o *Options) Enabled() ([]string, error) {
	registry := o.registry()
	enabled := map[string]bool{}
	for _, item := range o.EnabledControllers {
		item = strings.TrimSpace(item)
		switch {
		case item == AllControllers:
			for name := range registry {
				if _, decided := enabled[name]; !decided {
					enabled[name] = true
				}
			}
		case strings.HasPrefix(item, "-"):
			name := strings.TrimPrefix(item, "-")
			if _, ok := registry[name]; !ok {
				return nil, fmt.Errorf("unknown controller %q", name)
			}
			enabled[name] = false
		case item == "":
			return nil, fmt.Errorf("empty controller name")
		default:
			if _, ok := registry[item]; !ok {
				return nil, fmt.Errorf("unknown controller %q (registered: %s)", item, registeredList(registry))
			}
			enabled[item] = true
		}
	}
	var names []string
	for name, on := range enabled {
		if on {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

func (o *Options) registry() map[string]InitFunc {
	if o.Registry != nil {
		return o.Registry
	}
	return Controllers
}

func registeredList(registry map[string]InitFunc) string {
	if len(registry) == 0 {
		return "none"
	}
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func validateAddr(addr string) error {
	if addr == DisabledAddr {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("not [host]:port")
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("bad host %q", host)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func firstOr(errs []string, fallback string) string {
	if len(errs) == 0 || errs[0] == "" {
		return fallback
	}
	return errs[0]
}

// statusBudget is the status writes' QPS and burst: --status-qps and --status-burst, each
// defaulting to --qps and --burst.
func (o *Options) statusBudget() (float32, int) {
	qps, burst := o.StatusQPS, o.StatusBurst
	if qps == 0 {
		qps = o.QPS
	}
	if burst == 0 {
		burst = o.Burst
	}
	return qps, burst
}
