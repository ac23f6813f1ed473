// Package resolve is how every verb that acts on one workload reads it from its command line:
// TYPE/NAME, TYPE NAME or -f FILE, resolved by workload.Resolve through kubectl's resource
// builder and the factory's RESTMapper.
package resolve

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

const filenameFlag = "filename"

// AddFilenameFlag adds -f/--filename, as kubectl's commands name a workload by the file that
// holds it.
func AddFilenameFlag(cmd *cobra.Command) {
	cmd.Flags().StringSliceP(filenameFlag, "f", nil, "A file (or directory, or URL) holding the workload to act on, instead of TYPE/NAME.")
	_ = cmd.MarkFlagFilename(filenameFlag, "json", "yaml", "yml")
}

// Target resolves the workload a command acts on from its arguments or its -f files (when the
// command has the flag). It returns the arguments left after the object.
func Target(g genericclioptions.RESTClientGetter, cmd *cobra.Command, args []string, allowed ...workload.Kind) (workload.Target, []string, error) {
	var files []string
	if cmd != nil && cmd.Flags().Lookup(filenameFlag) != nil {
		var err error
		if files, err = cmd.Flags().GetStringSlice(filenameFlag); err != nil {
			return workload.Target{}, nil, err
		}
	}
	return workload.Resolve(g, args, files, allowed...)
}

// RestFunc takes the arguments after TYPE/NAME (or TYPE NAME); an error refuses them.
type RestFunc func(ref workload.Ref, rest []string) error

// NoArgs is the RestFunc of a verb that takes nothing after the object.
func NoArgs(ref workload.Ref, rest []string) error {
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments after %s: %v", ref, rest)
	}
	return nil
}

// Object is the one workload a verb shows (get, status, history) or changes (mutate.Target),
// and the client it is read with.
type Object struct {
	Ref       workload.Ref
	Namespace string
	Client    dynamic.Interface
}

// Complete resolves, in this order (the order of the errors a person sees): the object and its
// namespace, from args as TYPE/NAME or TYPE NAME, or from -f FILE, of one of the allowed kinds
// (Target); the arguments after it, given to rest (nil: NoArgs); check, the verb's own flags,
// which may name the object (nil: none); and the dynamic client.
func (o *Object) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string, rest RestFunc, check func(ref workload.Ref) error, allowed ...workload.Kind) error {
	target, more, err := Target(f, cmd, args, allowed...)
	if err != nil {
		return err
	}
	if rest == nil {
		rest = NoArgs
	}
	if err := rest(target.Ref, more); err != nil {
		return err
	}
	o.Ref = target.Ref
	if check != nil {
		if err := check(o.Ref); err != nil {
			return err
		}
	}
	o.Namespace = target.Namespace
	o.Client, err = f.DynamicClient()
	return err
}

// Get reads the object; a missing one is a one-line error naming it.
func (o *Object) Get(ctx context.Context) (*unstructured.Unstructured, error) {
	return workload.Get(ctx, o.Client, o.Namespace, o.Ref)
}
