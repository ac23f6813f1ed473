// Command workload-agent runs the kubectl-workload controllers in a cluster; see
// pkg/agent for the runtime and `workload-agent --help` for its flags.
package main

import (
	"os"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent"
)

func main() {
	os.Exit(agent.Main(agent.NewCommand(nil), os.Stderr))
}
