// Package resolve is how every verb that acts on one workload reads it from its command line:
// TYPE/NAME, TYPE NAME or -f FILE, resolved by workload.Resolve through kubectl's resource
// builder and the factory's RESTMapper.
package resolve

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

const filenameFlag = "filename"

// AddFilenameFlag adds -f/--filename, as kubectl's commands name a workload by the file that
// holds it.
func AddFilenameFlag(cmd *cobra.Command) {
	cmd.Flags().StringSliceP(filenameFlag, "f", nil, "A file (or directory, or URL) holding the workload to act on, instead of TYPE/NAME.")
	_ = cmd.MarkFlagFilename(filenameFlag, "json", "yaml", "yml")
}

// Target resolves the workload a command acts on from its arguments or its -f files (when the
// command has the flag). It returns the arguments left after the object.
func Target(g genericclioptions.RESTClientGetter, cmd *cobra.Command, args []string, allowed ...workload.Kind) (workload.Target, []string, error) {
	var files []string
	if cmd != nil && cmd.Flags().Lookup(filenameFlag) != nil {
		var err error
		if files, err = cmd.Flags().GetStringSlice(filenameFlag); err != nil {
			return workload.Target{}, nil, err
		}
	}
	return workload.Resolve(g, args, files, allowed...)
}

// Only resolves the workload like Target, for a command that takes no other argument: anything
// left after the object is refused.
func Only(g genericclioptions.RESTClientGetter, cmd *cobra.Command, args []string, allowed ...workload.Kind) (workload.Target, error) {
	target, rest, err := Target(g, cmd, args, allowed...)
	if err != nil {
		return workload.Target{}, err
	}
	if len(rest) > 0 {
		return workload.Target{}, fmt.Errorf("unexpected arguments after %s: %v", target.Ref, rest)
	}
	return target, nil
}
