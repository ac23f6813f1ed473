// Package mutate is the plumbing every mutating verb shares: its command (NewCommand: the
// --dry-run flag, Complete then Run); which object it acts on, in which namespace, through which
// client and in which dry-run mode (Target.Complete); reading it, and sending the Change the verb
// decided with its one line of confirmation (Target.Do, or Target.Get and Target.Send). Verbs
// keep only what is theirs: their texts and flags, their arguments after the object, and the
// decision (pkg/workload).
package mutate

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/completion"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/resolve"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// Verb is what a mutating verb's command shows: its usage line and help, and the kinds it acts
// on (what TYPE/NAME completes to).
type Verb struct {
	Use, Short, Long, Example string
	Kinds                     []workload.Kind
}

// NewCommand returns a mutating verb's command: complete resolves the arguments and flags, run
// does the work; an error from either ends the command with its message and exit code, as
// kubectl's commands do. It has the --dry-run flag, and completes TYPE/NAME (or TYPE NAME) with
// the verb's kinds and then their names in the namespace (completion.WorkloadNames).
func NewCommand(f cmdutil.Factory, v Verb, complete func(cmd *cobra.Command, args []string) error, run func(ctx context.Context) error) *cobra.Command {
	cmd := verb.NewCommand(verb.Text{Use: v.Use, Short: v.Short, Long: v.Long, Example: v.Example},
		completion.WorkloadNames(f, v.Kinds...), complete, run)
	cmdutil.AddDryRunFlag(cmd)
	resolve.AddFilenameFlag(cmd)
	return cmd
}

// Target is the object a mutating verb acts on and how its change is sent.
type Target struct {
	Ref       workload.Ref
	Namespace string
	DryRun    cmdutil.DryRunStrategy
	Client    dynamic.Interface
}

// RestFunc takes the arguments after TYPE/NAME (or TYPE NAME); an error refuses them.
type RestFunc = resolve.RestFunc

// NoArgs is the RestFunc of a verb that takes nothing after the object.
func NoArgs(ref workload.Ref, rest []string) error { return resolve.NoArgs(ref, rest) }

// Complete resolves, in this order (the order of the errors a person sees): the object and its
// namespace, from args as TYPE/NAME or TYPE NAME, or from -f FILE, of one of the allowed kinds
// (resolve.Target); the arguments after it, given to
// rest (nil: NoArgs); the --dry-run mode; and the dynamic client.
func (t *Target) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string, rest RestFunc, allowed ...workload.Kind) error {
	var o resolve.Object
	err := o.Complete(f, cmd, args, rest, func(workload.Ref) error {
		var err error
		t.DryRun, err = cmdutil.GetDryRunStrategy(cmd)
		return err
	}, allowed...)
	t.Ref, t.Namespace, t.Client = o.Ref, o.Namespace, o.Client
	return err
}

// Get reads the object; a missing one is a one-line error naming it.
func (t *Target) Get(ctx context.Context) (*unstructured.Unstructured, error) {
	return workload.Get(ctx, t.Client, t.Namespace, t.Ref)
}

// Send sends the change's patch in the dry-run mode (--dry-run=client: only shows it;
// --dry-run=server: sent with dryRun=All) and prints its line of confirmation to out, with a
// note of the dry-run mode. A change without a patch (nothing to do) only prints its line.
func (t *Target) Send(ctx context.Context, out io.Writer, c workload.Change) error {
	return c.Apply(ctx, t.Client, t.Namespace, t.DryRun, out)
}

// Decide turns the object as read into the Change a verb makes; ctx is for any more reads.
type Decide func(ctx context.Context, obj *unstructured.Unstructured) (workload.Change, error)

// Do reads the object, decides the change and sends it (Get, decide, Send).
func (t *Target) Do(ctx context.Context, out io.Writer, decide Decide) error {
	if ctx == nil {
		ctx = context.Background()
	}
	obj, err := t.Get(ctx)
	if err != nil {
		return err
	}
	change, err := decide(ctx, obj)
	if err != nil {
		return err
	}
	return t.Send(ctx, out, change)
}

// ObjectVerb is a mutating verb that takes nothing but the object and decides its change from
// the object alone (abort, retry).
type ObjectVerb struct {
	Target
	Decide func(ref workload.Ref, obj *unstructured.Unstructured) (workload.Change, error)
	Out    io.Writer
}

// NewObjectCommand returns the command of a verb that takes nothing but the object (of
// v.Kinds) and sends the change decide makes of it.
func NewObjectCommand(f cmdutil.Factory, out io.Writer, v Verb, decide func(workload.Ref, *unstructured.Unstructured) (workload.Change, error)) *cobra.Command {
	o := &ObjectVerb{Decide: decide, Out: out}
	return NewCommand(f, v,
		func(cmd *cobra.Command, args []string) error {
			return o.Target.Complete(f, cmd, args, NoArgs, v.Kinds...)
		},
		func(ctx context.Context) error {
			return o.Do(ctx, o.Out, func(_ context.Context, obj *unstructured.Unstructured) (workload.Change, error) {
				return o.Decide(o.Ref, obj)
			})
		})
}
