// Package undo implements `kubectl workload undo`: go back to an earlier template.
package undo

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var (
	undoLong = templates.LongDesc(`
		Roll a workload back to an earlier template, as 'kubectl rollout undo' does: by default
		to the latest revision that is not the current one, or to --to-revision N (see
		'kubectl workload history'). The agent (or kube-controller-manager) then rolls the pods
		as for any other template change, honouring partitions and pauses.

		* ud (UnitedDeployment), sts (StatefulSet) and ds (DaemonSet): spec.template is restored from a ControllerRevision. A StatefulSet or DaemonSet a Canary holds keeps its pods: the Canary releases the restored template through its steps.
		* deploy (Deployment): spec.template is restored from a ReplicaSet, without its pod-template-hash label. A paused Deployment is refused: resume it first.
		* tapp: spec.template and spec.templatePool are restored from a ControllerRevision the agent recorded (whoever changed the TApp: kubectl apply, edit, patch or set image); the agent records the restored templates as the newest revision, so a second undo goes back again.

		The patch tests metadata.generation as it was read: if anyone changed the spec in the
		meantime, nothing is overwritten and the command fails; run it again after checking.
		Going back to the current template changes nothing.`)

	undoExample = templates.Examples(`
		# Go back to the previous template of a UnitedDeployment
		kubectl workload undo ud/orders

		# Go back to revision 3 of a StatefulSet
		kubectl workload undo sts/db --to-revision=3

		# Undo the last template change of a TApp
		kubectl workload undo tapp/gameserver

		# Show the patch that would be sent, without sending it
		kubectl workload undo deploy/front --dry-run=client`)
)

// Options holds what undo needs.
type Options struct {
	ToRevision int64

	mutate.Target

	genericiooptions.IOStreams
}

// NewCmdUndo returns the `undo` command.
func NewCmdUndo(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := mutate.NewCommand(f, mutate.Verb{Use: "undo TYPE/NAME [--to-revision N]", Short: "Roll a workload back to an earlier template", Long: undoLong, Example: undoExample,
		Kinds: workload.WithHistory},
		func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run)
	cmd.Flags().Int64Var(&o.ToRevision, "to-revision", 0, "The revision to go back to; 0 means the latest revision that is not the current one")
	return cmd
}

// Complete resolves the object, the namespace, the dry-run mode and the client.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.Target.Complete(f, cmd, args, func(ref workload.Ref, rest []string) error {
		if err := mutate.NoArgs(ref, rest); err != nil {
			return err
		}
		if o.ToRevision < 0 {
			return fmt.Errorf("%s: --to-revision must be a revision number, not %d", ref, o.ToRevision)
		}
		return nil
	}, workload.WithHistory...)
}

// Run reads the workload and its history, and restores the chosen template.
func (o *Options) Run(ctx context.Context) error {
	// A Deployment a Canary scales as its stable or canary one is refused; one a Canary targets
	// is held paused by it, and the template undo writes is its next release.
	holder, err := workload.UndoHolder(ctx, o.Client, o.Namespace, o.Ref)
	if err != nil {
		return err
	}
	return o.Do(ctx, o.Out, func(ctx context.Context, obj *unstructured.Unstructured) (workload.Change, error) {
		if holder == nil {
			if err := workload.CheckUndoable(o.Ref, obj); err != nil {
				return workload.Change{}, err
			}
		}
		revs, err := workload.Revisions(ctx, o.Client, o.Namespace, o.Ref, obj)
		if err != nil {
			return workload.Change{}, err
		}
		if holder == nil {
			return workload.Undo(o.Ref, obj, revs, o.ToRevision)
		}
		ch, err := workload.UndoHeld(o.Ref, obj, revs, o.ToRevision)
		if err == nil && ch.Patch != nil {
			ch.Line += fmt.Sprintf("; canary/%s releases it through its steps (kubectl workload status canary/%s -w)", holder.Canary, holder.Canary)
		}
		return ch, err
	})
}
