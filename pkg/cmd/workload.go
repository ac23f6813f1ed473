// Package cmd assembles the `kubectl workload` command tree. Each verb lives in its own package
// under pkg/cmd and is added here.
package cmd

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/analyze"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/abort"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/completion"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/dashboard"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/get"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/history"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/install"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/instance"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/list"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/notify"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/pause"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/promote"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/retry"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/set"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/setpartition"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/status"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/undo"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/version"
)

var long = templates.LongDesc(`
		Release advanced workloads: TApp (instances with identity), UnitedDeployment (one
		service across zones) and Canary (a release in steps, with pauses, checks and rollback:
		from a stable to a canary Deployment; of a StatefulSet, TApp, UnitedDeployment or
		DaemonSet in place; or of a Deployment through a temporary canary Deployment), plus
		native Deployments, StatefulSets and DaemonSets where a verb makes sense.

		Every verb edits the object with a small, precise patch; the workload-agent running in
		the cluster does the rest.`)

// NewCmdWorkload returns the root command of the plugin.
func NewCmdWorkload(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubectl-workload",
		Short: "Release advanced Kubernetes workloads",
		Long:  long,
		// kubectl plugins are run as `kubectl workload`; show that in usage and help.
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl workload",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		Run: func(cmd *cobra.Command, args []string) {
			_ = cmd.Help()
		},
	}
	flags := genericclioptions.NewConfigFlags(true).WithDeprecatedPasswordFlag().WithDiscoveryBurst(300).WithDiscoveryQPS(50.0)
	flags.AddFlags(cmd.PersistentFlags())
	f := cmdutil.NewFactory(flags)

	cmd.AddCommand(
		pause.NewCmdPause(f, streams),
		pause.NewCmdResume(f, streams),
		promote.NewCmdPromote(f, streams),
		abort.NewCmdAbort(f, streams),
		retry.NewCmdRetry(f, streams),
		notify.NewCmdNotify(f, streams),
		analyze.NewCmdAnalyze(f, streams),
		instance.NewCmdKillInstance(f, streams),
		instance.NewCmdStartInstance(f, streams),
		setpartition.NewCmdSetPartition(f, streams),
		set.NewCmdSet(f, streams),
		undo.NewCmdUndo(f, streams),
		history.NewCmdHistory(f, streams),
		version.NewCmdVersion(streams),
		status.NewCmdStatus(f, streams),
		completion.NewCmdCompletion(streams),
		get.NewCmdGet(f, streams),
		list.NewCmdList(f, streams),
		install.NewCmdInstall(f, streams),
		install.NewCmdUninstall(f, streams),
		dashboard.NewCmdDashboard(f, streams),
	)
	return cmd
}
