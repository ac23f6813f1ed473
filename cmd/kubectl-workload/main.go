// Command kubectl-workload is the kubectl plugin: `kubectl workload <verb>`.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/cli"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	// Every client auth plugin (OIDC, exec, …) so that any kubeconfig kubectl accepts works here.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	// First of ours, for its init: see the package.
	_ "github.com/kubectl-workload/kubectl-workload/cmd/kubectl-workload/internal/gcpercent"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd"
)

func main() {
	root := cmd.NewCmdWorkload(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cli.RunNoErrOutput(root); err != nil {
		// One line, prefixed "error: ", exit 1: the same as kubectl.
		cmdutil.CheckErr(err)
	}
}
