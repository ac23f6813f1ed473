// Package instance implements `kubectl workload kill-instance` and `start-instance`: stop a
// TApp instance by id, or start it again with the same id, pod name and volumes.
package instance

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
	killLong = templates.LongDesc(`
		Kill TApp instances by id: set spec.statuses[ID] to Killed. The agent deletes the
		instance's pod and does not re-create it; the id, the pod name and the instance's
		volumes are kept for start-instance. Ids are 0 to replicas-1. Killing a killed instance
		changes nothing.`)

	killExample = templates.Examples(`
		# Stop instance 3 of a TApp
		kubectl workload kill-instance tapp/gameserver 3

		# Stop several instances at once
		kubectl workload kill-instance tapp gameserver 0 4 7

		# Show the patch that would be sent, without sending it
		kubectl workload kill-instance tapp/gameserver 3 --dry-run=client`)

	startLong = templates.LongDesc(`
		Start killed TApp instances again: remove their spec.statuses[ID] entry. The agent
		re-creates each pod with the same id, name and volumes. Ids are 0 to replicas-1.
		Starting an instance that is not killed changes nothing.`)

	startExample = templates.Examples(`
		# Start instance 3 of a TApp again
		kubectl workload start-instance tapp/gameserver 3

		# Start several instances at once
		kubectl workload start-instance tapp/gameserver 0 4 7`)
)

// Options holds what kill-instance and start-instance need.
type Options struct {
	// Kill is true for kill-instance, false for start-instance.
	Kill bool
	IDs  []string

	mutate.Target

	genericiooptions.IOStreams
}

// NewCmdKillInstance returns the `kill-instance` command.
func NewCmdKillInstance(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, streams, true, "kill-instance TYPE/NAME ID...", "Stop TApp instances by id", killLong, killExample)
}

// NewCmdStartInstance returns the `start-instance` command.
func NewCmdStartInstance(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, streams, false, "start-instance TYPE/NAME ID...", "Start killed TApp instances again", startLong, startExample)
}

func newCmd(f cmdutil.Factory, streams genericiooptions.IOStreams, kill bool, use, short, long, example string) *cobra.Command {
	o := &Options{Kill: kill, IOStreams: streams}
	return mutate.NewCommand(f, mutate.Verb{Use: use, Short: short, Long: long, Example: example, Kinds: workload.WithInstances},
		func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run)
}

// Complete resolves the object, the ids, the namespace, the dry-run mode and the client.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.Target.Complete(f, cmd, args, func(_ workload.Ref, ids []string) error {
		o.IDs = ids
		return nil
	}, workload.WithInstances...)
}

// Run reads the TApp, validates the ids against its replicas and sends the JSON patch.
func (o *Options) Run(ctx context.Context) error {
	decide := workload.StartInstances
	if o.Kill {
		decide = workload.KillInstances
	}
	return o.Do(ctx, o.Out, func(_ context.Context, obj *unstructured.Unstructured) (workload.Change, error) {
		return decide(o.Ref, obj, o.IDs)
	})
}
