// Package promote implements `kubectl workload promote`: approve a Canary's paused batch (or
// every batch), or release a UnitedDeployment's subsets by setting their partitions to 0.
package promote

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	promoteLong = templates.LongDesc(`
		Promote a release past its manual gate.

		On a canary: approve the batch the release is paused at, so the agent starts the next
		one. The approval is recorded in the Canary's spec as the highest approved batch number
		(spec.approvedBatch), and the patch tests the value it read first: two people promoting
		the same paused batch at the same moment advance the release by exactly one batch, and
		the one who loses the race is told the batch is already approved. A canary that is not
		paused at a batch is refused (there is nothing to approve). --full approves every batch
		at once (spec.approvedBatch = the number of batches), whether the release is paused or
		not. Promote never clears spec.paused: a canary held with 'kubectl workload pause' stays
		held until 'kubectl workload resume'. A canary that is rolling back cannot be promoted.

		On a ud (UnitedDeployment): set the partition of each subset named with --subset, or of
		every subset with --all, to 0, so that all their pods move to the updated revision.`)

	promoteExample = templates.Examples(`
		# Approve the batch a canary release is paused at
		kubectl workload promote canary/checkout

		# Approve every remaining batch: the release runs to the end without stopping
		kubectl workload promote canary/checkout --full

		# Release the new revision to every pod of zone-a and zone-b
		kubectl workload promote ud/orders --subset zone-a --subset zone-b

		# Release it everywhere
		kubectl workload promote ud/orders --all

		# Show the patch that would be sent, without sending it
		kubectl workload promote canary/checkout --dry-run=client`)
)

// Options holds what promote needs.
type Options struct {
	Full    bool
	Subsets []string
	All     bool

	mutate.Target

	genericiooptions.IOStreams
}

// NewCmdPromote returns the `promote` command.
func NewCmdPromote(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := mutate.NewCommand(f, mutate.Verb{Use: "promote TYPE/NAME [--full | --subset NAME... | --all]",
		Short: "Approve a canary's paused batch, or release a UnitedDeployment's subsets", Long: promoteLong, Example: promoteExample,
		Kinds: workload.Promotable},
		func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, cmd, args); err != nil {
				return err
			}
			return o.Validate()
		}, o.Run)
	cmd.Flags().BoolVar(&o.Full, "full", false, "Canary: approve every batch, not only the paused one")
	cmd.Flags().StringArrayVar(&o.Subsets, "subset", nil, "UnitedDeployment: a subset whose partition is set to 0 (repeatable)")
	cmd.Flags().BoolVar(&o.All, "all", false, "UnitedDeployment: set the partition of every subset to 0")
	return cmd
}

// Complete resolves the object, the namespace, the dry-run mode and the client.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.Target.Complete(f, cmd, args, mutate.NoArgs, workload.Promotable...)
}

// Validate checks that the flags fit the kind.
func (o *Options) Validate() error {
	return workload.CheckPromote(o.Ref, o.options())
}

func (o *Options) options() workload.PromoteOptions {
	return workload.PromoteOptions{Full: o.Full, Subsets: o.Subsets, All: o.All}
}

// Run reads the object, decides the change and sends it.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// A UnitedDeployment a Canary releases in place has its partitions set by the agent, step
	// by step: a promote of its subsets would be set back at once.
	if err := workload.RefuseHeldPartition(ctx, o.Client, o.Namespace, o.Ref); err != nil {
		return err
	}
	var batch int32
	err := o.Do(ctx, o.Out, func(_ context.Context, obj *unstructured.Unstructured) (change workload.Change, err error) {
		change, batch, err = workload.Promote(o.Ref, obj, o.options())
		return change, err
	})
	if !errors.Is(err, workload.ErrPrecondition) {
		return err
	}
	// Someone changed spec.approvedBatch between our read and our patch: most likely a
	// concurrent promote of the same batch. Report what happened; never promote again, which
	// could approve a batch nobody has looked at yet.
	again, getErr := o.Get(ctx)
	if getErr != nil {
		return err
	}
	if batch > 0 && workload.Approved(again, batch) {
		_, err := fmt.Fprintf(o.Out, "%s: batch %d was approved meanwhile by someone else; nothing more was changed\n", o.Ref, batch)
		return err
	}
	return err
}
