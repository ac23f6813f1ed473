package workload

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// Change is what a mutating verb decided to do to one object: the patch to send and the line
// that confirms it. When there is nothing to do (the object is already as asked), Patch is nil
// and Line says so; the verb prints it and exits 0, like pause on a paused workload.
type Change struct {
	Ref   Ref
	Patch *Patch
	// Line is the confirmation, starting with the object's name: "canary/checkout promoted:
	// batch 1 of 4 approved", or "tapp/web: instance 3 is already killed".
	Line string
}

// Unchanged is the Change of a verb with nothing to do.
func Unchanged(ref Ref, format string, args ...interface{}) Change {
	return Change{Ref: ref, Line: fmt.Sprintf(format, args...)}
}

// Apply sends a Change (or, under --dry-run=client, only shows it) and prints its one line of
// confirmation. A Change without a patch only prints its line.
func (c Change) Apply(ctx context.Context, client dynamic.Interface, namespace string, dryRun cmdutil.DryRunStrategy, out io.Writer) error {
	if c.Patch == nil {
		_, err := fmt.Fprintln(out, c.Line)
		return err
	}
	if _, err := Send(ctx, client, namespace, c.Ref, *c.Patch, dryRun); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%s%s\n", c.Line, DryRunNote(*c.Patch, dryRun))
	return err
}
