// Package version implements `kubectl workload version`.
package version

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/version"
)

var example = templates.Examples(`
	# Print the plugin's version
	kubectl workload version

	# Print it as JSON, for scripts
	kubectl workload version -o json`)

// Options holds the flags of `version`.
type Options struct {
	Output string
	genericiooptions.IOStreams
}

// NewCmdVersion returns the `version` command.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of the plugin",
		Example: example,
		Args:    cobra.NoArgs,
		// No arguments: nothing to complete, and no file names either.
		ValidArgsFunction: cobra.NoFileCompletions,
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(o.Validate())
			cmdutil.CheckErr(o.Run())
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: one of json or yaml (default: one line of text).")
	return cmd
}

// Validate refuses an output format we do not print.
func (o *Options) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q is not supported: use json or yaml", o.Output)
}

// Run prints the version.
func (o *Options) Run() error {
	info := version.Get()
	switch o.Output {
	case "json":
		data, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.Out, string(data))
		return err
	case "yaml":
		data, err := yaml.Marshal(info)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(data)
		return err
	}
	_, err := fmt.Fprintf(o.Out, "kubectl-workload %s\n", info)
	return err
}
