// Package abort implements `kubectl workload abort`: roll a Canary release back.
package abort

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	abortLong = templates.LongDesc(`
		Abort a canary release: set its spec.rollback, so the agent scales the stable Deployment
		back up to full size first, then the canary Deployment down. Available capacity never
		drops below spec.replicas while it does. Works at any batch and after the release has
		completed. Aborting a canary that is already rolling back changes nothing.

		To release again, set spec.rollback back to false (for example with a new template):
		the release then starts over from batch 1.`)

	abortExample = templates.Examples(`
		# Roll a canary release back to its stable Deployment
		kubectl workload abort canary/checkout

		# Show the patch that would be sent, without sending it
		kubectl workload abort canary/checkout --dry-run=client`)
)

// Options holds what abort needs.
type Options struct {
	Ref       workload.Ref
	Namespace string
	DryRun    cmdutil.DryRunStrategy
	Client    dynamic.Interface

	genericiooptions.IOStreams
}

// NewCmdAbort returns the `abort` command.
func NewCmdAbort(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "abort TYPE/NAME",
		DisableFlagsInUseLine: true,
		Short:                 "Roll a canary release back to its stable Deployment",
		Long:                  abortLong,
		Example:               abortExample,
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(o.Complete(f, cmd, args))
			cmdutil.CheckErr(o.Run(cmd.Context()))
		},
	}
	cmdutil.AddDryRunFlag(cmd)
	return cmd
}

// Complete resolves the object, the namespace, the dry-run mode and the client.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	ref, rest, err := workload.ParseRef(args, workload.Abortable...)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments after %s: %v", ref, rest)
	}
	o.Ref = ref
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return err
	}
	o.Client, err = f.DynamicClient()
	return err
}

// Run sets spec.rollback with a one-field merge patch, unless it is already set.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	obj, err := workload.Get(ctx, o.Client, o.Namespace, o.Ref)
	if err != nil {
		return err
	}
	change, err := workload.AbortCanary(o.Ref, obj)
	if err != nil {
		return err
	}
	return change.Apply(ctx, o.Client, o.Namespace, o.DryRun, o.Out)
}
