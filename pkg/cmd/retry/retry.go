// Package retry implements `kubectl workload retry`: start an aborted Canary release again.
package retry

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	retryLong = templates.LongDesc(`
		Start an aborted canary release again from step 1: one that rolled back by itself (a
		failed analysis check, an exceeded progress deadline: status.abort) or that a person
		aborted (spec.rollback). It raises spec.retries by one, sets spec.rollback to false and
		spec.approvedBatch to 0, in one JSON patch that tests spec.retries first, so two retries
		at once start the release once. The release runs the Canary's current template: change
		what failed first (kubectl workload set image).

		A release that was not aborted is refused and nothing is changed.`)

	retryExample = templates.Examples(`
		# Release a fixed image after an automatic rollback
		kubectl workload set image canary/checkout checkout=registry.example/checkout:1.4.1
		kubectl workload retry canary/checkout

		# Show the patch that would be sent, without sending it
		kubectl workload retry canary/checkout --dry-run=client`)
)

// NewCmdRetry returns the `retry` command.
func NewCmdRetry(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return mutate.NewObjectCommand(f, streams.Out, mutate.Verb{Use: "retry TYPE/NAME", Short: "Start an aborted canary release again from step 1", Long: retryLong, Example: retryExample,
		Kinds: workload.Retryable}, workload.Retry)
}
