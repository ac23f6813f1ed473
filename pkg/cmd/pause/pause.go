// Package pause implements `kubectl workload pause` and `resume`: the same switch, set either way.
package pause

import (
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
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

// NewCmdPause returns the `pause` command.
func NewCmdPause(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, streams, true, "pause TYPE/NAME", "Pause a workload's rollout", pauseLong, pauseExample)
}

// NewCmdResume returns the `resume` command.
func NewCmdResume(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(f, streams, false, "resume TYPE/NAME", "Resume a paused rollout", resumeLong, resumeExample)
}

// newCmd sets the kind's pause switch to paused with a one-field merge patch, unless it is
// already set that way.
func newCmd(f cmdutil.Factory, streams genericiooptions.IOStreams, paused bool, use, short, long, example string) *cobra.Command {
	return mutate.NewObjectCommand(f, streams.Out, mutate.Verb{Use: use, Short: short, Long: long, Example: example, Kinds: workload.Pausable},
		func(ref workload.Ref, obj *unstructured.Unstructured) (workload.Change, error) {
			return workload.PauseChange(ref, obj, paused)
		})
}
