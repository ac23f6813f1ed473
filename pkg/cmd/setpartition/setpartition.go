// Package setpartition implements `kubectl workload set-partition`: how many pods keep their
// current revision while a TApp, a StatefulSet or each subset of a UnitedDeployment updates.
package setpartition

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	setPartitionLong = templates.LongDesc(`
		Set the partition of a rollout: the pods whose ordinal (instance id) is below the
		partition keep their current revision; the others are updated. Lower it step by step
		to release an update gradually; 0 updates everything.

		On a tapp: spec.updateStrategy.partition, from 0 to spec.replicas.

		On a sts (StatefulSet): spec.updateStrategy.rollingUpdate.partition, from 0 to
		spec.replicas. A StatefulSet using the OnDelete strategy has no partition and is refused.

		On a ud (UnitedDeployment): one partition per subset, given as SUBSET=N (several at once
		are sent in one patch), from 0 to the subset's replicas as the agent reports them. A
		UnitedDeployment of Deployment subsets accepts only 0, since a Deployment cannot keep
		pods on an old revision: hold it with pause instead.

		An unknown subset or a partition above the replicas is refused and changes nothing.`)

	setPartitionExample = templates.Examples(`
		# Keep instances 0 to 7 of a TApp on their current template, update the rest
		kubectl workload set-partition tapp/gameserver 8

		# Release a StatefulSet's update to every pod
		kubectl workload set-partition sts/db 0

		# Update zone-a completely and 2 pods of zone-b (which has 5), hold zone-c
		kubectl workload set-partition ud/orders zone-a=0 zone-b=3 zone-c=4

		# Show the patch that would be sent, without sending it
		kubectl workload set-partition ud/orders zone-a=0 --dry-run=client`)
)

// Options holds what set-partition needs.
type Options struct {
	// Args are N, or SUBSET=N for a UnitedDeployment.
	Args []string

	mutate.Target

	genericiooptions.IOStreams
}

// NewCmdSetPartition returns the `set-partition` command.
func NewCmdSetPartition(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	return mutate.NewCommand(f, mutate.Verb{Use: "set-partition TYPE/NAME (N | SUBSET=N...)",
		Short: "Set how many pods keep their current revision during an update", Long: setPartitionLong, Example: setPartitionExample,
		Kinds: workload.Partitionable},
		func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run)
}

// Complete resolves the object, the partitions, the namespace, the dry-run mode and the client.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.Target.Complete(f, cmd, args, func(_ workload.Ref, rest []string) error {
		o.Args = rest
		return nil
	}, workload.Partitionable...)
}

// Run reads the object, checks the partitions against its replicas and sends a merge patch.
func (o *Options) Run(ctx context.Context) error {
	if err := workload.RefuseHeldPartition(ctx, o.Client, o.Namespace, o.Ref); err != nil {
		return err
	}
	return o.Do(ctx, o.Out, func(_ context.Context, obj *unstructured.Unstructured) (workload.Change, error) {
		return workload.SetPartition(o.Ref, obj, o.Args)
	})
}
