// Package pause implements `kubectl workload pause` and `resume`: the same switch, set either way.
package pause

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	pauseLong = templates.LongDesc(`
		Pause a workload's rollout: the agent (or, for a Deployment, kube-controller-manager)
		stops moving pods to the new template until it is resumed. Pods already updated stay
		updated. Pausing a paused workload changes nothing.

		Works on tapp, ud (UnitedDeployment), canary and deploy (Deployment). A StatefulSet has no
		pause: hold its pods with set-partition.`)

	pauseExample = templates.Examples(`
		# Stop a TApp's rolling update where it is
		kubectl workload pause tapp/gameserver

		# Hold a canary release, whatever its pauseType says
		kubectl workload pause canary checkout

		# Show the patch that would be sent, without sending it
		kubectl workload pause ud/orders --dry-run=client`)

	resumeLong = templates.LongDesc(`
		Resume a paused workload's rollout. Resuming a workload that is not paused changes nothing.

		Works on tapp, ud (UnitedDeployment), canary and deploy (Deployment).`)

	resumeExample = templates.Examples(`
		# Let a paused TApp finish its update
		kubectl workload resume tapp/gameserver

		# Resume a held canary release
		kubectl workload resume canary/checkout`)
)

// Options holds what pause and resume need.
type Options struct {
	// Paused is what the switch is set to: true for pause, false for resume.
	Paused bool

	Ref       workload.Ref
	Namespace string
	DryRun    cmdutil.DryRunStrategy
	Client    dynamic.Interface

	genericiooptions.IOStreams
}

// NewCmdPause returns the `pause` command.
func NewCmdPause(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, streams, true, "pause TYPE/NAME", "Pause a workload's rollout", pauseLong, pauseExample)
}

// NewCmdResume returns the `resume` command.
func NewCmdResume(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, streams, false, "resume TYPE/NAME", "Resume a paused rollout", resumeLong, resumeExample)
}

func newCmd(f cmdutil.Factory, streams genericiooptions.IOStreams, paused bool, use, short, long, example string) *cobra.Command {
	o := &Options{Paused: paused, IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   use,
		DisableFlagsInUseLine: true,
		Short:                 short,
		Long:                  long,
		Example:               example,
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
	ref, rest, err := workload.ParseRef(args, workload.Pausable...)
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

// Run sets the switch with a one-field merge patch, unless it is already set that way.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	verb := map[bool]string{true: "paused", false: "resumed"}[o.Paused]
	obj, err := workload.Get(ctx, o.Client, o.Namespace, o.Ref)
	if err != nil {
		return err
	}
	current, err := workload.IsPaused(o.Ref.Kind, obj)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Ref, err)
	}
	if current == o.Paused {
		state := map[bool]string{true: "is already paused", false: "is not paused"}[o.Paused]
		_, err := fmt.Fprintf(o.Out, "%s %s\n", o.Ref, state)
		return err
	}
	patch, err := workload.PausePatch(o.Ref.Kind, o.Paused)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Ref, err)
	}
	switch o.DryRun {
	case cmdutil.DryRunClient:
		_, err := fmt.Fprintf(o.Out, "%s %s (dry run: would send the merge patch %s)\n", o.Ref, verb, patch)
		return err
	case cmdutil.DryRunServer:
		verb += " (server dry run)"
	}
	opts := metav1.PatchOptions{}
	if o.DryRun == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := o.Client.Resource(o.Ref.Kind.Resource).Namespace(o.Namespace).Patch(ctx, o.Ref.Name, types.MergePatchType, patch, opts); err != nil {
		return fmt.Errorf("%s: %w", o.Ref, err)
	}
	_, err = fmt.Fprintf(o.Out, "%s %s\n", o.Ref, verb)
	return err
}
