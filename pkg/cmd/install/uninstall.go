package install

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	uninstallLong = templates.LongDesc(`
		Remove what install applied: the workload-agent (its Deployment, Service, RBAC and the
		workload-system namespace) and the CustomResourceDefinitions.

		Deleting a CRD deletes every object of its kind, and the garbage collector then deletes
		what they own: the pods of every TApp, the subset workloads of every UnitedDeployment, the
		canary Deployments. So uninstall refuses to delete the CRDs while a TApp,
		UnitedDeployment or Canary exists anywhere in the cluster. Delete them first, keep the
		CRDs with --keep-crds (the workloads stay, unmanaged, until the agent is back), or pass
		--force to delete them all.

		Like kubectl delete, uninstall does not ask for confirmation; --dry-run=client shows
		what it would delete. Objects already gone are reported and skipped.`)

	uninstallExample = templates.Examples(`
		# Remove the agent and the CRDs (refused while workloads exist)
		kubectl workload uninstall

		# Remove only the agent, keeping the CRDs and the workloads
		kubectl workload uninstall --keep-crds

		# Show what would be deleted
		kubectl workload uninstall --dry-run=client`)
)

// UninstallOptions holds what uninstall needs.
type UninstallOptions struct {
	KeepCRDs bool
	Force    bool
	DryRun   cmdutil.DryRunStrategy
	Client   dynamic.Interface

	genericiooptions.IOStreams
}

// NewCmdUninstall returns the `uninstall` command.
func NewCmdUninstall(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UninstallOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "uninstall [--keep-crds] [--force] [--dry-run=client|server]",
		DisableFlagsInUseLine: true,
		Short:                 "Remove the workload-agent and the CRDs from the cluster",
		Long:                  uninstallLong,
		Example:               uninstallExample,
		ValidArgsFunction:     cobra.NoFileCompletions,
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(o.Complete(f, cmd, args))
			cmdutil.CheckErr(o.Run(cmd.Context()))
		},
	}
	cmd.Flags().BoolVar(&o.KeepCRDs, "keep-crds", false, "Remove only the agent; keep the CRDs and every TApp, UnitedDeployment and Canary.")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Delete the CRDs even though workloads exist: deletes every TApp, UnitedDeployment and Canary and what they own.")
	cmdutil.AddDryRunFlag(cmd)
	return cmd
}

// Complete checks the arguments and resolves the dry-run mode and the client.
func (o *UninstallOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("uninstall takes no arguments, got %v", args)
	}
	if o.KeepCRDs && o.Force {
		return fmt.Errorf("--force deletes the CRDs and --keep-crds keeps them: choose one")
	}
	var err error
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	o.Client, err = f.DynamicClient()
	return err
}

// Run deletes the manifests in the reverse order of install.
func (o *UninstallOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	objs, err := Manifests(DefaultImage(), false)
	if err != nil {
		return err
	}
	if !o.KeepCRDs && !o.Force {
		if err := o.refuseWhileWorkloadsExist(ctx); err != nil {
			return err
		}
	}
	// The agent first (it stops acting on workloads), its namespace last among its objects, then
	// the CRDs.
	var crds, agent []int
	for i, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, i)
		} else {
			agent = append(agent, i)
		}
	}
	var order []int
	for i := len(agent) - 1; i >= 0; i-- {
		order = append(order, agent[i])
	}
	if !o.KeepCRDs {
		order = append(order, crds...)
	}
	opts := metav1.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)}
	suffix := ""
	switch o.DryRun {
	case cmdutil.DryRunClient:
		suffix = " (dry run)"
	case cmdutil.DryRunServer:
		suffix = " (server dry run)"
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, i := range order {
		obj := objs[i]
		r, err := resourceOf(obj)
		if err != nil {
			return err
		}
		name := displayName(obj)
		if o.DryRun == cmdutil.DryRunClient {
			fmt.Fprintf(o.Out, "%s deleted%s\n", name, suffix)
			continue
		}
		var ri dynamic.ResourceInterface = o.Client.Resource(r.gvr)
		if r.namespaced {
			ri = o.Client.Resource(r.gvr).Namespace(obj.GetNamespace())
		}
		err = ri.Delete(ctx, obj.GetName(), opts)
		switch {
		case apierrors.IsNotFound(err):
			fmt.Fprintf(o.Out, "%s not found\n", name)
		case err != nil:
			return fmt.Errorf("deleting %s: %w", name, err)
		default:
			fmt.Fprintf(o.Out, "%s deleted%s\n", name, suffix)
		}
	}
	return nil
}

// refuseWhileWorkloadsExist fails, naming a few, when custom resources exist in any namespace.
func (o *UninstallOptions) refuseWhileWorkloadsExist(ctx context.Context) error {
	var found []string
	for _, k := range workload.Listable {
		list, err := o.Client.Resource(k.Resource).List(ctx, metav1.ListOptions{Limit: 3})
		switch {
		case apierrors.IsNotFound(err):
			continue // the CRD is not installed
		case err != nil:
			return fmt.Errorf("checking for %s before deleting the CRDs: %w", k.Resource.GroupResource(), err)
		}
		for _, item := range list.Items {
			found = append(found, fmt.Sprintf("%s %s/%s", k.Short, item.GetNamespace(), item.GetName()))
		}
		if list.GetContinue() != "" {
			found = append(found, "more "+k.Resource.Resource)
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("refusing to delete the CRDs while workloads exist (%s; see kubectl workload list -A): deleting a CRD deletes its workloads and their pods; delete them first, keep the CRDs with --keep-crds, or pass --force",
		strings.Join(found, ", "))
}

func ptrTo[T any](v T) *T { return &v }
