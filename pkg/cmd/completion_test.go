package cmd

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/abort"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/history"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/instance"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/pause"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/promote"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/set"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/setpartition"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/undo"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// Every verb that names a workload (TYPE/NAME in its usage) completes it, and every other
// runnable verb says what it completes (at least: no file names).
func TestEveryVerbCompletesItsArguments(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || strings.HasPrefix(sub.Name(), "__") {
				continue
			}
			if sub.Runnable() && !sub.HasSubCommands() && sub.ValidArgsFunction == nil && len(sub.ValidArgs) == 0 {
				t.Errorf("%s: no completion of its arguments (ValidArgsFunction)", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(NewCmdWorkload(streams))
}

// completes runs `__complete ARGS` against the verb and returns the completions.
func completes(t *testing.T, newCmd cmdtest.NewCmd, args ...string) []string {
	t.Helper()
	root := func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		r := &cobra.Command{Use: "kubectl-workload"}
		r.AddCommand(newCmd(f, streams))
		return r
	}
	res := cmdtest.Run(t, root, nil, append([]string{"__complete"}, args...)...)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(res.Out), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") {
			out = append(out, l)
		}
	}
	return out
}

// The kinds a mutating verb (or history) completes are exactly the kinds it accepts: a kind it
// completes is looked up (and not found, here), a kind it does not complete is refused.
func TestCompletedKindsAreTheAcceptedOnes(t *testing.T) {
	verbs := []struct {
		name   string
		newCmd cmdtest.NewCmd
		args   []string
	}{
		{"abort", abort.NewCmdAbort, nil},
		{"pause", pause.NewCmdPause, nil},
		{"resume", pause.NewCmdResume, nil},
		{"promote", promote.NewCmdPromote, nil},
		{"kill-instance", instance.NewCmdKillInstance, []string{"1"}},
		{"start-instance", instance.NewCmdStartInstance, []string{"1"}},
		{"set-partition", setpartition.NewCmdSetPartition, []string{"1"}},
		{"undo", undo.NewCmdUndo, nil},
		{"history", history.NewCmdHistory, nil},
	}
	image := func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		return set.NewCmdImage(f, streams)
	}
	verbs = append(verbs, struct {
		name   string
		newCmd cmdtest.NewCmd
		args   []string
	}{"image", image, []string{"main=nginx"}})
	for _, v := range verbs {
		t.Run(v.name, func(t *testing.T) {
			completed := completes(t, v.newCmd, v.name, "")
			if len(completed) == 0 {
				t.Fatalf("%s completes no kind", v.name)
			}
			for _, k := range workload.Kinds {
				res := cmdtest.Run(t, v.newCmd, nil, append([]string{k.Short + "/nope"}, v.args...)...)
				accepted := strings.Contains(res.Fatal, k.Short+"/nope not found")
				refused := strings.Contains(res.Fatal, "this command does not work on a "+k.Name)
				if accepted == refused {
					t.Fatalf("%s %s/nope: %q is neither a lookup nor a refusal", v.name, k.Short, res.Fatal)
				}
				if accepted != slices.Contains(completed, k.Short+"/") {
					t.Errorf("%s: completes %v; %s accepted: %v", v.name, completed, k.Short, accepted)
				}
			}
		})
	}
}
