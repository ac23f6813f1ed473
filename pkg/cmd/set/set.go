// Package set implements `kubectl workload set`, whose subcommand `set image` changes container
// images in a workload's pod template.
package set

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
	setLong = templates.LongDesc(`
		Change a part of a workload with a small patch. Today: set image.`)

	imageLong = templates.LongDesc(`
		Set the image of one or more containers of a workload's pod template, as
		'kubectl set image' does, on every kind the plugin knows. CONTAINER=IMAGE names a
		container or an init container; *=IMAGE sets every one of them. Only the containers
		whose image changes are sent; an unknown container is refused with the list of the
		template's containers, and nothing changes.

		The template changed is:

		* tapp: spec.template, or the templatePool entry named by spec.defaultTemplateName when that is set (what instances without their own assignment run); --template NAME picks a templatePool entry.
		* ud: the pod template of the subset template in use (statefulSetTemplate, deploymentTemplate or tappTemplate).
		* canary: spec.canary.template, the template being released.
		* deploy, sts, ds: spec.template.

		Deployments, StatefulSets and DaemonSets get a strategic merge patch (containers merged
		by name); on one a Canary releases in place (spec.targetRef), the line says that the
		Canary releases the change through its steps.
		Our custom resources accept no strategic merge patch, so they get a JSON patch that
		replaces each image by container index after testing that the container at that index
		still has that name. The agent records every template change of a TApp (for history and
		undo); the plugin records nothing.`)

	imageExample = templates.Examples(`
		# Release a new image to a TApp's instances
		kubectl workload set image tapp/gameserver server=registry.example/gameserver:1.8

		# Change a templatePool entry of a TApp
		kubectl workload set image tapp/gameserver server=registry.example/gameserver:1.8 --template canary

		# Start a canary release of a new image
		kubectl workload set image canary/checkout app=registry.example/checkout:2.0

		# Set every container (and init container) of a UnitedDeployment to one image
		kubectl workload set image ud/orders '*=registry.example/orders:3.1'

		# Show the patch that would be sent, without sending it
		kubectl workload set image deploy/front nginx=nginx:1.27 --dry-run=client`)
)

// NewCmdSet returns the `set` command.
func NewCmdSet(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "set SUBCOMMAND",
		DisableFlagsInUseLine: true,
		Short:                 "Change a part of a workload: set image",
		Long:                  setLong,
		Run:                   cmdutil.DefaultSubCommandRun(streams.ErrOut),
	}
	cmd.AddCommand(NewCmdImage(f, streams))
	return cmd
}

// ImageOptions holds what set image needs.
type ImageOptions struct {
	// Template names a TApp's templatePool entry.
	Template string
	// Args are the CONTAINER=IMAGE assignments.
	Args []string

	mutate.Target

	genericiooptions.IOStreams
}

// NewCmdImage returns the `set image` command.
func NewCmdImage(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ImageOptions{IOStreams: streams}
	cmd := mutate.NewCommand(f, mutate.Verb{Use: "image TYPE/NAME CONTAINER=IMAGE... [--template NAME]",
		Short: "Set container images of a workload's pod template", Long: imageLong, Example: imageExample, Kinds: workload.ImageSettable},
		func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run)
	cmd.Flags().StringVar(&o.Template, "template", "", "TApp: the templatePool entry to change instead of the default template")
	return cmd
}

// Complete resolves the object, the assignments, the namespace, the dry-run mode and the client.
func (o *ImageOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.Target.Complete(f, cmd, args, func(_ workload.Ref, rest []string) error {
		o.Args = rest
		return nil
	}, workload.ImageSettable...)
}

// Run reads the object, resolves the containers and sends the patch.
func (o *ImageOptions) Run(ctx context.Context) error {
	// A workload a Canary targets keeps its pods: the line says who releases them. A
	// Deployment a Canary scales as its stable or canary one is refused.
	holder, err := workload.HeldTarget(ctx, o.Client, o.Namespace, o.Ref, "set image on")
	if err != nil {
		return err
	}
	return o.Do(ctx, o.Out, func(_ context.Context, obj *unstructured.Unstructured) (workload.Change, error) {
		ch, err := workload.SetImage(o.Ref, obj, o.Template, o.Args)
		if err == nil && holder != nil && holder.Role == "target" && ch.Patch != nil {
			ch.Line += fmt.Sprintf("; canary/%s releases it through its steps (kubectl workload status canary/%s -w)", holder.Canary, holder.Canary)
		}
		return ch, err
	})
}
