package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// `kubectl workload --help` lists every verb, and each verb's help has examples written as
// `kubectl workload …`, kubectl style.
func TestEveryVerbHasKubectlStyleExamples(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	root := NewCmdWorkload(streams)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || strings.HasPrefix(sub.Name(), "__") {
				continue
			}
			if sub.Runnable() && !sub.HasSubCommands() {
				// CommandPath is "kubectl workload <verb>": the root is displayed as kubectl workload.
				if sub.Short == "" {
					t.Errorf("%s: no short help", sub.CommandPath())
				}
				if !strings.HasPrefix(sub.CommandPath(), "kubectl workload ") || !strings.Contains(sub.Example, sub.CommandPath()) {
					t.Errorf("%s: examples do not show '%s':\n%s", sub.CommandPath(), sub.CommandPath(), sub.Example)
				}
			}
			walk(sub)
		}
	}
	walk(root)
}
