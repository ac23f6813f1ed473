// Package abort implements `kubectl workload abort`: roll a Canary release back.
package abort

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	abortLong = templates.LongDesc(`
		Abort a canary release: set its spec.rollback. With a stable and a canary Deployment,
		the agent scales the stable Deployment back up to full size first, then the canary
		Deployment down: available capacity never drops below spec.replicas while it does. With
		spec.targetRef (a StatefulSet, TApp, UnitedDeployment, DaemonSet or Deployment), it
		writes the template of the release's stable revision back to the target, whose pods
		return to it step by step. Works at any step and after the release has completed.
		Aborting a canary that is already rolling back changes nothing.

		To release the aborted template again, run kubectl workload retry: the release starts
		over from step 1.`)

	abortExample = templates.Examples(`
		# Roll a canary release back to what ran before it
		kubectl workload abort canary/checkout

		# Show the patch that would be sent, without sending it
		kubectl workload abort canary/checkout --dry-run=client`)
)

// NewCmdAbort returns the `abort` command.
func NewCmdAbort(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return mutate.NewObjectCommand(f, streams.Out, mutate.Verb{Use: "abort TYPE/NAME", Short: "Roll a canary release back to its stable revision", Long: abortLong, Example: abortExample,
		Kinds: workload.Abortable}, workload.Abort)
}
