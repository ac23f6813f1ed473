// Package dashboard is `kubectl workload dashboard`: the web dashboard (pkg/dashboard) served on
// the person's machine with their kubeconfig credentials, guarded by a random token in the URL
// it prints.
package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/dashboard"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	dashboardLong = templates.LongDesc(`
		Serve a web dashboard of the workloads on this machine and open it in the browser.

		It lists the TApps, UnitedDeployments and Canaries (and the Deployments, StatefulSets
		and DaemonSets the Canaries release) of the namespace, or of every namespace with -A,
		and shows each release live: its steps, its pods per revision, its traffic weights, the
		values its analysis checks measured against their thresholds, and its Events. Its
		buttons (promote, promote --full, pause, resume, abort, retry, undo) run the same code
		as the verbs, after a confirmation that shows what will change.

		The dashboard acts with your kubeconfig credentials: what you may not do with kubectl,
		it may not do either, and the API server's refusal is shown in the page. It listens on
		127.0.0.1 and prints one line with its URL, which carries a random token: any request
		without the token is refused (401). --read-only refuses every action. Ctrl-C stops it.`)

	dashboardExample = templates.Examples(`
		# Open the dashboard of the current namespace
		kubectl workload dashboard

		# Every namespace, on port 8080, without opening a browser
		kubectl workload dashboard -A --port 8080 --no-open

		# Look, but change nothing
		kubectl workload dashboard --read-only`)
)

// Options are the dashboard's flags and what Complete resolves from them.
type Options struct {
	Port          int
	Address       string
	NoOpen        bool
	ReadOnly      bool
	AllNamespaces bool

	Namespace string
	Reader    dashboard.Reader
	// Open opens the URL in a browser (openBrowser; tests replace it).
	Open func(url string) error
	// Ready, when set, is called with the URL once the server listens (tests).
	Ready func(url string)

	genericiooptions.IOStreams
}

// NewCmdDashboard returns the dashboard command.
func NewCmdDashboard(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, Open: openBrowser}
	cmd := verb.NewCommand(verb.Text{Use: "dashboard [--port N] [--address IP] [--no-open] [--read-only] [-A]",
		Short: "Serve a live web dashboard of the releases", Long: dashboardLong, Example: dashboardExample}, nil,
		func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			return o.Validate()
		}, o.Run)
	cmd.Flags().IntVar(&o.Port, "port", 0, "The port to listen on; 0 picks a free one")
	cmd.Flags().StringVar(&o.Address, "address", "127.0.0.1", "The IP address to listen on")
	cmd.Flags().BoolVar(&o.NoOpen, "no-open", false, "Print the URL without opening a browser")
	cmd.Flags().BoolVar(&o.ReadOnly, "read-only", false, "Show, but refuse every action")
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Show the workloads of every namespace you may list")
	return cmd
}

// Complete resolves the namespace and the clients.
func (o *Options) Complete(f cmdutil.Factory, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("dashboard takes no arguments, got %q", args)
	}
	var err error
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return err
	}
	if o.AllNamespaces {
		o.Namespace = metav1.NamespaceAll
	}
	if o.Reader.Dyn, err = f.DynamicClient(); err != nil {
		return err
	}
	o.Reader.Kube, err = workload.KubeClient(f)
	return err
}

// Validate refuses a port or an address that cannot be listened on.
func (o *Options) Validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--port must be between 0 and 65535, not %d", o.Port)
	}
	if net.ParseIP(o.Address) == nil {
		return fmt.Errorf("--address must be an IP address, not %q", o.Address)
	}
	return nil
}

// Run serves the dashboard until ctx ends or the process is interrupted.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	token, err := newToken()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("listening on %s port %d: %w", o.Address, o.Port, err)
	}
	hub := dashboard.NewHub(o.Reader.Dyn, o.Namespace)
	hub.Start(ctx)
	srv := &http.Server{
		Handler:           dashboard.New(dashboard.Config{Token: token, ReadOnly: o.ReadOnly, Namespace: o.Namespace, Reader: o.Reader}, hub).Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	url := fmt.Sprintf("http://%s/%s/", ln.Addr().String(), token)
	ro := ""
	if o.ReadOnly {
		ro = " read-only"
	}
	fmt.Fprintf(o.Out, "Serving the%s dashboard at %s (Ctrl-C stops it)\n", ro, url)
	if ip := net.ParseIP(o.Address); !ip.IsLoopback() {
		fmt.Fprintf(o.ErrOut, "warning: listening on %s: anyone who can reach it and has the URL acts as you\n", o.Address)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if !o.NoOpen && o.Open != nil {
		if err := o.Open(url); err != nil {
			fmt.Fprintf(o.ErrOut, "could not open a browser (%v): open the URL above\n", err)
		}
	}
	if o.Ready != nil {
		go o.Ready(url)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// newToken is 24 random bytes, URL-safe: what guards the dashboard.
func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// openBrowser opens url with the desktop's opener.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	return cmd.Start()
}
