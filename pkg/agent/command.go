package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/kubectl-workload/kubectl-workload/pkg/version"
)

// UsageError is a bad command line: a flag value that does not parse or does not validate. The
// command exits 2 on it, 1 on any other error.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ExitCode is the process exit code for an error returned by the command: 0 for nil, 2 for a
// UsageError, else 1.
func ExitCode(err error) int {
	var usage *UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		return 2
	default:
		return 1
	}
}

// NewCommand returns the workload-agent command. run is what it runs once the flags are valid;
// nil means Run. The command's context is cancelled on SIGTERM or SIGINT (a second signal kills
// the process at once).
func NewCommand(run func(ctx context.Context, opts *Options) error) *cobra.Command {
	if run == nil {
		run = Run
	}
	opts := NewOptions()
	cmd := &cobra.Command{
		Use:   "workload-agent",
		Short: "Runs the kubectl-workload controllers (TApp, UnitedDeployment, Canary) in a cluster",
		Long: `workload-agent runs the controllers of the apps.workload.dev API (TApp, UnitedDeployment,
Canary) against a Kubernetes cluster. It shares one set of informers between all controllers
(pods and PVCs only those labelled app.kubernetes.io/managed-by=workload-agent), elects a leader
on a Lease so that several replicas can run with one active, and serves /healthz, /readyz and
/metrics.

On SIGTERM or SIGINT it stops its controllers, lets them finish what they are doing, releases
the Lease and exits 0. It exits non-zero when it loses the Lease; its restart rejoins the
election.`,
		Version:       version.Get().String(),
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return &UsageError{Err: err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			// A second signal, once the first cancelled ctx, gets the default action: exit now.
			context.AfterFunc(ctx, stop)
			defer stop()
			defer klog.Flush()
			return run(ctx, opts)
		},
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	fs := cmd.Flags()
	opts.AddFlags(fs)
	goFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(goFlags)
	fs.AddGoFlagSet(goFlags)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &UsageError{Err: flagError(err)}
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version of workload-agent",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "workload-agent %s\n", version.Get())
		},
	})
	return cmd
}

// flagError rewrites pflag's parse errors into one line naming the flag, the problem and what
// the flag allows.
func flagError(err error) error {
	var invalid *pflag.InvalidValueError
	if errors.As(err, &invalid) {
		name := invalid.GetFlag().Name
		allowed := FlagHelp[name]
		if allowed == "" {
			allowed = "a value of type " + invalid.GetFlag().Value.Type()
		}
		return fmt.Errorf("invalid value %q for --%s: %s; allowed: %s", invalid.GetValue(), name, causeText(err), allowed)
	}
	var required *pflag.ValueRequiredError
	if errors.As(err, &required) {
		name := required.GetFlag().Name
		allowed := FlagHelp[name]
		if allowed == "" {
			allowed = "a value of type " + required.GetFlag().Value.Type()
		}
		return fmt.Errorf("missing value for --%s: the flag needs an argument; allowed: %s", name, allowed)
	}
	if strings.Contains(err.Error(), "unknown") {
		return fmt.Errorf("%v (see workload-agent --help)", err)
	}
	return err
}

func causeText(err error) string {
	cause := errors.Unwrap(err)
	if cause == nil {
		return "cannot parse it"
	}
	msg := cause.Error()
	// strconv's messages repeat the value ("strconv.ParseFloat: parsing \"x\": invalid syntax").
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// Main runs the command with the process's arguments and returns the exit code, printing a
// returned error as one line on stderr.
func Main(cmd *cobra.Command, stderr io.Writer) int {
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "workload-agent: %s\n", oneLine(err))
	}
	return ExitCode(err)
}
