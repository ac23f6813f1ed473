package install

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
)

// clusterOptions is what install and uninstall share: how long they wait, their dry-run mode,
// their client and their streams.
type clusterOptions struct {
	// Timeout bounds the command's wait (install: for the CRDs to be established; uninstall
	// --force: for the workloads to be gone).
	Timeout time.Duration
	DryRun  cmdutil.DryRunStrategy
	Client  dynamic.Interface

	genericiooptions.IOStreams
}

// newCommand returns the command of install or uninstall (verb.NewCommand) with the flags both
// have: --timeout, by default timeout, and --dry-run.
func (o *clusterOptions) newCommand(t verb.Text, complete func(cmd *cobra.Command, args []string) error, run func(ctx context.Context) error, timeout time.Duration, timeoutHelp string) *cobra.Command {
	cmd := verb.NewCommand(t, nil, complete, run)
	cmd.Flags().DurationVar(&o.Timeout, "timeout", timeout, timeoutHelp)
	cmdutil.AddDryRunFlag(cmd)
	return cmd
}

// complete checks, in the order a person sees the errors, that verb got no arguments, the
// verb's own flags (check), and that --timeout is positive; then resolves the dry-run mode and
// the dynamic client (which --dry-run=client does without unless clientOnDryRun).
func (o *clusterOptions) complete(f cmdutil.Factory, cmd *cobra.Command, args []string, verb string, check func() error, clientOnDryRun bool) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments, got %v", verb, args)
	}
	if err := check(); err != nil {
		return err
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", o.Timeout)
	}
	var err error
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	if o.DryRun == cmdutil.DryRunClient && !clientOnDryRun {
		return nil
	}
	o.Client, err = f.DynamicClient()
	return err
}

// resourceFor is where obj, one of the manifests, is served: its resource, in its namespace
// when the kind is namespaced.
func (o *clusterOptions) resourceFor(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	r, err := resourceOf(obj)
	if err != nil {
		return nil, err
	}
	if r.namespaced {
		return o.Client.Resource(r.gvr).Namespace(obj.GetNamespace()), nil
	}
	return o.Client.Resource(r.gvr), nil
}

// deleteOptions are the options of uninstall's deletes in the dry-run mode (background
// propagation), with the note its lines of confirmation end with.
func (o *clusterOptions) deleteOptions() (metav1.DeleteOptions, string) {
	opts := metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)}
	switch o.DryRun {
	case cmdutil.DryRunClient:
		return opts, " (dry run)"
	case cmdutil.DryRunServer:
		opts.DryRun = []string{metav1.DryRunAll}
		return opts, " (server dry run)"
	}
	return opts, ""
}

// delete deletes one object (--dry-run=client: only says so) and prints its line of
// confirmation, "NAME deleted"; it reports false, printing nothing, for an object already
// gone.
func (o *clusterOptions) delete(ctx context.Context, ri dynamic.ResourceInterface, name, objName string) (bool, error) {
	opts, suffix := o.deleteOptions()
	if o.DryRun != cmdutil.DryRunClient {
		err := ri.Delete(ctx, objName, opts)
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("deleting %s: %w", name, err)
		}
	}
	fmt.Fprintf(o.Out, "%s deleted%s\n", name, suffix)
	return true, nil
}

func ptrTo[T any](v T) *T { return &v }
