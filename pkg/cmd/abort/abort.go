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

// NewCmdAbort returns the `abort` command.
func NewCmdAbort(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return mutate.NewObjectCommand(f, streams.Out, mutate.Verb{Use: "abort TYPE/NAME", Short: "Roll a canary release back to its stable Deployment", Long: abortLong, Example: abortExample,
		Kinds: workload.Abortable}, workload.Abort)
}
