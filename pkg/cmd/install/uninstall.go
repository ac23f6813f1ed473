package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// uninstallText is what the `uninstall` command shows.
var uninstallText = verb.Text{
	Use:   "uninstall [--keep-crds] [--force] [--dry-run=client|server]",
	Short: "Remove the workload-agent and the CRDs from the cluster",
	Long: templates.LongDesc(`
		Remove what install applied: the workload-agent (its Deployment, Service, RBAC and the
		workload-system namespace) and the CustomResourceDefinitions.

		Deleting a CRD deletes every object of its kind, and the garbage collector then deletes
		what they own: the pods of every TApp, the subset workloads of every UnitedDeployment. So
		uninstall refuses to delete the CRDs while a TApp, UnitedDeployment or Canary exists
		anywhere in the cluster. Delete them first, keep the CRDs with --keep-crds (the workloads
		stay, unmanaged, until the agent is back), or pass --force to delete them all.

		--force deletes every UnitedDeployment, Canary and TApp first, while the agent still
		runs, and waits (up to --timeout) until they are gone; only then does it remove the agent
		and the CRDs. Every Canary carries the finalizer
		apps.workload.dev/orphan-canary-deployment: the agent removes it once it has taken the
		canary Deployment out of the Canary's ownership, so the canary Deployment (and its pods)
		is kept, as when a Canary is deleted by hand. If the workloads are not gone in time (the
		agent is not running, for instance), uninstall stops with an error naming them, having
		deleted nothing else; start the agent and run it again, or remove a Canary's finalizer
		yourself, knowing that the garbage collector then deletes its canary Deployment.

		With --keep-crds, Canaries keep their finalizer: one deleted while the agent is away stays
		until the agent is back.

		Like kubectl delete, uninstall does not ask for confirmation; --dry-run=client shows
		what it would delete. Objects already gone are reported and skipped.`),

	Example: templates.Examples(`
		# Remove the agent and the CRDs (refused while workloads exist)
		kubectl workload uninstall

		# Remove only the agent, keeping the CRDs and the workloads
		kubectl workload uninstall --keep-crds

		# Delete every TApp, UnitedDeployment and Canary too, then the agent and the CRDs
		kubectl workload uninstall --force --timeout=5m

		# Show what would be deleted
		kubectl workload uninstall --dry-run=client`),
}

// pollInterval is how often uninstall --force checks whether the workloads are gone.
var pollInterval = time.Second

// UninstallOptions holds what uninstall needs.
type UninstallOptions struct {
	KeepCRDs bool
	Force    bool

	// clusterOptions' Timeout bounds the wait, with --force, for the workloads to be gone.
	clusterOptions
}

// NewCmdUninstall returns the `uninstall` command.
func NewCmdUninstall(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UninstallOptions{clusterOptions: clusterOptions{IOStreams: streams}}
	cmd := o.newCommand(uninstallText, func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run,
		2*time.Minute, "With --force, how long to wait for the workloads to be gone before giving up (nothing else is deleted then).")
	cmd.Flags().BoolVar(&o.KeepCRDs, "keep-crds", false, "Remove only the agent; keep the CRDs and every TApp, UnitedDeployment and Canary.")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Delete the CRDs even though workloads exist: first deletes every UnitedDeployment, Canary and TApp (and what they own, except canary Deployments, which the agent keeps) and waits until they are gone, while the agent still runs.")
	return cmd
}

// Complete checks the arguments and resolves the dry-run mode and the client.
func (o *UninstallOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.complete(f, cmd, args, "uninstall", func() error {
		if o.KeepCRDs && o.Force {
			return fmt.Errorf("--force deletes the CRDs and --keep-crds keeps them: choose one")
		}
		return nil
	}, true)
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
	if o.Force {
		// While the agent still runs: it releases every Canary's finalizer.
		if err := o.deleteWorkloads(ctx, agentDeployment(objs)); err != nil {
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
	for _, i := range order {
		obj := objs[i]
		ri, err := o.resourceFor(obj)
		if err != nil {
			return err
		}
		name := displayName(obj)
		found, err := o.delete(ctx, ri, name, obj.GetName())
		if err != nil {
			return err
		}
		if !found {
			fmt.Fprintf(o.Out, "%s not found\n", name)
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

// deleteOrder is the order --force deletes our kinds in: UnitedDeployments first (they would
// re-create their subset TApps), Canaries, then TApps.
var deleteOrder = []workload.Kind{workload.UnitedDeployment, workload.Canary, workload.TApp}

// deleteWorkloads deletes every UnitedDeployment, Canary and TApp in the cluster and waits until
// they are gone. A Canary goes only once the agent has removed its finalizer (after releasing
// the canary Deployment, which stays); TApps a UnitedDeployment controls are left to the
// garbage collector. On timeout it fails, naming what is left, and the caller deletes nothing
// more.
func (o *UninstallOptions) deleteWorkloads(ctx context.Context, agent *unstructured.Unstructured) error {
	n := 0
	for _, k := range deleteOrder {
		items, err := o.listAll(ctx, k)
		if err != nil {
			return err
		}
		for _, item := range items {
			name := fmt.Sprintf("%s %s/%s", k.Short, item.GetNamespace(), item.GetName())
			if controlledByDeleted(&item) {
				continue // the garbage collector deletes it with its controller (a UnitedDeployment's TApps)
			}
			n++
			if item.GetDeletionTimestamp() != nil {
				fmt.Fprintf(o.Out, "%s is being deleted\n", name)
				continue
			}
			found, err := o.delete(ctx, o.Client.Resource(k.Resource).Namespace(item.GetNamespace()), name, item.GetName())
			if err != nil {
				return err
			}
			if !found {
				n--
			}
		}
	}
	if n == 0 || o.DryRun != cmdutil.DryRunNone {
		return nil
	}
	return o.waitWorkloadsGone(ctx, agent)
}

// waitWorkloadsGone waits up to the timeout for every workload to be gone; on timeout it names
// what is left and how to release it.
func (o *UninstallOptions) waitWorkloadsGone(ctx context.Context, agent *unstructured.Unstructured) error {
	fmt.Fprintf(o.Out, "waiting up to %v for the workloads to be gone (the workload-agent releases each Canary once it has kept its canary Deployment)\n", o.Timeout)
	var left []string
	// The checks use ctx, not the poll's context: a list near the deadline would otherwise fail
	// in the client's rate limiter ("would exceed context deadline") instead of just finishing.
	err := wait.PollUntilContextTimeout(ctx, pollInterval, o.Timeout, true, func(context.Context) (bool, error) {
		left = left[:0]
		for _, k := range deleteOrder {
			items, err := o.listAll(ctx, k)
			if err != nil {
				return false, err
			}
			for _, item := range items {
				name := fmt.Sprintf("%s %s/%s", k.Short, item.GetNamespace(), item.GetName())
				if slices.Contains(item.GetFinalizers(), v1alpha1.FinalizerOrphanCanary) {
					name += " (finalizer " + v1alpha1.FinalizerOrphanCanary + ")"
				}
				left = append(left, name)
			}
		}
		return len(left) == 0, nil
	})
	switch {
	case err == nil:
		_, err := fmt.Fprintln(o.Out, "every TApp, UnitedDeployment and Canary is gone")
		return err
	case !wait.Interrupted(err):
		return err
	}
	if len(left) > 5 {
		left = append(left[:5], fmt.Sprintf("and %d more", len(left)-5))
	}
	return fmt.Errorf("timed out after %v waiting for the workloads to be gone: %s left; the agent, the CRDs and everything else were not deleted. "+
		"The workload-agent removes a Canary's finalizer once it has kept its canary Deployment: check that it runs (%s) and run uninstall --force again; "+
		"or remove the finalizer yourself (kubectl patch canary NAME -n NAMESPACE --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'), "+
		"and the garbage collector deletes the canary Deployment with the Canary",
		o.Timeout, strings.Join(left, ", "), o.agentState(ctx, agent))
}

// listAll lists a kind in every namespace; a kind whose CRD is not installed has none.
func (o *UninstallOptions) listAll(ctx context.Context, k workload.Kind) ([]unstructured.Unstructured, error) {
	list, err := o.Client.Resource(k.Resource).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("listing %s: %w", k.Resource.GroupResource(), err)
	}
	return list.Items, nil
}

// controlledByDeleted reports whether obj's controller is of a kind uninstall deletes: the garbage
// collector deletes obj with it.
func controlledByDeleted(obj *unstructured.Unstructured) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	for _, k := range deleteOrder {
		if gv.Group == k.Resource.Group && ref.Kind == k.Name {
			return true
		}
	}
	return false
}

// agentDeployment is the agent's Deployment among the manifests.
func agentDeployment(objs []*unstructured.Unstructured) *unstructured.Unstructured {
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" {
			return obj
		}
	}
	return nil
}

// agentState says how the agent's Deployment is, for the timeout message.
func (o *UninstallOptions) agentState(ctx context.Context, agent *unstructured.Unstructured) string {
	if agent == nil {
		return "is the workload-agent running?"
	}
	where := fmt.Sprintf("kubectl get deployment %s -n %s", agent.GetName(), agent.GetNamespace())
	ri, err := o.resourceFor(agent)
	if err != nil {
		return where
	}
	d, err := ri.Get(ctx, agent.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return where + ": not found, so the agent runs elsewhere or not at all"
	case err != nil:
		return where
	}
	available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
	return fmt.Sprintf("%s: %d available", where, available)
}
