// Package verb builds a verb's command the one way the plugin's verbs are built, kubectl's
// way: complete the options from the arguments and flags, then run; an error from either ends
// the command with its message and exit code (cmdutil.CheckErr). Verbs keep only what is
// theirs: their texts, flags, options and work.
package verb

import (
	"context"

	"github.com/spf13/cobra"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// Text is what a verb's command shows: its usage line and help.
type Text struct {
	Use, Short, Long, Example string
}

// NewCommand returns a verb's command: complete resolves the arguments and flags, run does the
// work. valid completes the arguments; nil completes nothing, not even file names.
func NewCommand(t Text, valid cobra.CompletionFunc, complete func(cmd *cobra.Command, args []string) error, run func(ctx context.Context) error) *cobra.Command {
	if valid == nil {
		valid = cobra.NoFileCompletions
	}
	return &cobra.Command{
		Use:                   t.Use,
		DisableFlagsInUseLine: true,
		Short:                 t.Short,
		Long:                  t.Long,
		Example:               t.Example,
		ValidArgsFunction:     valid,
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(complete(cmd, args))
			cmdutil.CheckErr(run(cmd.Context()))
		},
	}
}
