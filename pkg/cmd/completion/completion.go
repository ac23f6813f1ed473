// Package completion implements `kubectl workload completion` and the dynamic completion of
// TYPE/NAME arguments that the verbs share.
package completion

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// PluginCompletionScript is the kubectl_complete-workload executable: kubectl (1.26 and later)
// runs it, with the words after `kubectl workload`, to complete `kubectl workload <TAB>`.
const PluginCompletionScript = `#!/usr/bin/env sh
# Completion of 'kubectl workload' for kubectl's plugin completion (kubectl 1.26 or later): kubectl
# runs this, found on PATH as kubectl_complete-workload, with the words typed after
# 'kubectl workload'. Keep it on PATH next to kubectl-workload.
exec kubectl-workload __complete "$@"
`

var (
	// As kubectl's own completion help: prose in Long (templates.LongDesc joins the lines of a
	// paragraph), commands in Example, where every line is kept.
	completionLong = templates.LongDesc(`
		Print a shell completion script: for bash, zsh, fish or PowerShell, to complete the
		kubectl-workload binary run directly; or, with 'kubectl', the kubectl_complete-workload
		script that kubectl's own completion (kubectl 1.26 or later) runs to complete
		'kubectl workload' commands.

		kubectl_complete-workload must be on your PATH next to kubectl-workload. The release
		archive holds it, but krew does not put it on PATH: write it into a directory on your
		PATH as the first example does. kubectl's own completion must be loaded too (see
		'kubectl completion --help').`)

	completionExample = templates.Examples(`
		# Make 'kubectl workload [Tab]' complete verbs, kinds and names (any shell)
		kubectl workload completion kubectl > ~/.local/bin/kubectl_complete-workload
		chmod +x ~/.local/bin/kubectl_complete-workload

		# Load completion of kubectl-workload into the current shell: bash, zsh, fish, PowerShell
		source <(kubectl-workload completion bash)
		source <(kubectl-workload completion zsh)
		kubectl-workload completion fish | source
		kubectl-workload completion powershell | Out-String | Invoke-Expression

		# Install it for every bash session (Linux, with the bash-completion package)
		kubectl-workload completion bash > ~/.local/share/bash-completion/completions/kubectl-workload

		# Install it for every zsh session
		kubectl-workload completion zsh > "${fpath[1]}/_kubectl-workload"`)
)

var shells = map[string]func(root *cobra.Command, out io.Writer) error{
	"bash":       func(root *cobra.Command, out io.Writer) error { return root.GenBashCompletionV2(out, true) },
	"zsh":        func(root *cobra.Command, out io.Writer) error { return root.GenZshCompletion(out) },
	"fish":       func(root *cobra.Command, out io.Writer) error { return root.GenFishCompletion(out, true) },
	"powershell": func(root *cobra.Command, out io.Writer) error { return root.GenPowerShellCompletionWithDesc(out) },
	"kubectl": func(_ *cobra.Command, out io.Writer) error {
		_, err := io.WriteString(out, PluginCompletionScript)
		return err
	},
}

// ShellNames lists the arguments completion accepts.
var ShellNames = []string{"bash", "zsh", "fish", "powershell", "kubectl"}

// NewCmdCompletion returns the `completion` command.
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:                   "completion bash|zsh|fish|powershell|kubectl",
		DisableFlagsInUseLine: true,
		Short:                 "Print a shell completion script",
		Long:                  completionLong,
		Example:               completionExample,
		ValidArgs:             ShellNames,
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(run(cmd, streams.Out, args))
		},
	}
}

func run(cmd *cobra.Command, out io.Writer, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("name one shell: %s", strings.Join(ShellNames, ", "))
	}
	gen, ok := shells[args[0]]
	if !ok {
		return fmt.Errorf("unknown shell %q: use one of %s", args[0], strings.Join(ShellNames, ", "))
	}
	return gen(cmd.Root(), out)
}

// lookupTimeout bounds the API call that completes a name: a slow cluster must not freeze the
// shell.
const lookupTimeout = 5 * time.Second

// WorkloadNames completes a verb's TYPE/NAME (or TYPE NAME) argument: the kinds the verb accepts,
// then the names of that kind in the namespace, read from the API server.
func WorkloadNames(f cmdutil.Factory, kinds ...workload.Kind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch {
		case len(args) == 0 && strings.Contains(toComplete, "/"):
			typed, prefix, _ := strings.Cut(toComplete, "/")
			kind, ok := allowedKind(typed, kinds)
			if !ok {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, n := range names(cmd.Context(), f, kind, prefix) {
				out = append(out, typed+"/"+n)
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		case len(args) == 0:
			var out []cobra.Completion
			for _, k := range kinds {
				if strings.HasPrefix(k.Short, toComplete) {
					out = append(out, k.Short+"/")
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		case len(args) == 1 && !strings.Contains(args[0], "/"):
			kind, ok := allowedKind(args[0], kinds)
			if !ok {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return names(cmd.Context(), f, kind, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

func allowedKind(typed string, kinds []workload.Kind) (workload.Kind, bool) {
	k, ok := workload.KindFor(typed)
	if !ok {
		return workload.Kind{}, false
	}
	for _, a := range kinds {
		if a.Name == k.Name {
			return k, true
		}
	}
	return workload.Kind{}, false
}

// names lists the names of a kind in the command's namespace that start with prefix; nothing
// when the cluster cannot be reached.
func names(ctx context.Context, f cmdutil.Factory, kind workload.Kind, prefix string) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ns, _, err := f.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil
	}
	client, err := f.DynamicClient()
	if err != nil {
		return nil
	}
	list, err := workload.In(client, kind, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("listing %s: %v", kind.Resource.Resource, err), true)
		return nil
	}
	var out []string
	for _, item := range list.Items {
		if strings.HasPrefix(item.GetName(), prefix) {
			out = append(out, item.GetName())
		}
	}
	sort.Strings(out)
	return out
}
