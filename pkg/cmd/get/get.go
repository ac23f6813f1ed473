// Package get implements `kubectl workload get`: a workload drawn as a tree down to its pods.
package get

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/completion"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/resolve"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/status"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/textwidth"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// getText is what the `get` command shows.
var getText = verb.Text{
	Use:   "get TYPE/NAME [-o wide|json|yaml|name]",
	Short: "Show a workload as a tree: subsets, batches or revisions down to pods",
	Long: templates.LongDesc(`
		Show a workload as a tree down to its pods, with each pod's readiness, status and
		restarts:

		* tapp: the instances by id, each with its pod and template
		* ud (UnitedDeployment): the subset workloads, with partition and revision, then their pods
		* canary: the batches, then the stable and the canary Deployment with their pods, or the workload its targetRef releases (a target Deployment with its temporary canary Deployment)
		* deploy (Deployment): the ReplicaSets (one per revision), then their pods
		* sts (StatefulSet): the pods grouped by revision
		* ds (DaemonSet): the pods grouped by revision, the update revision (the ControllerRevision that records its template) first
		* atpl (AnalysisTemplate), catpl (ClusterAnalysisTemplate): the arguments with their defaults, then each check with what it measures, how often, and its conditions

		Pods are read with the workload's label selector, never by listing every pod of the
		namespace, so get stays fast in busy namespaces.

		On a terminal, each line is cut to its width (the INFO column ends with "…"); -o wide
		prints every line whole. COLUMNS, when set, is the width to cut to, also for a pipe or
		a file, which otherwise get never cuts.

		With -o json or -o yaml, prints a List of the workload and every object of its tree;
		-o name prints their names.

		With --watch (-w), reads the tree again every --interval and shows it each time it
		changes: redrawn in place on a terminal, printed again (after a blank line) to a pipe
		or a file. It runs until interrupted (Ctrl-C) or the workload can no longer be read.`),

	Example: templates.Examples(`
		# Show a TApp's instances and their pods
		kubectl workload get tapp/gameserver

		# Show a UnitedDeployment's subsets, zone by zone
		kubectl workload get ud orders -n shop

		# The names of a canary release's objects, for scripting
		kubectl workload get canary/checkout -o name

		# Follow a canary release step by step
		kubectl workload get canary/checkout -w

		# What a ClusterAnalysisTemplate measures and which arguments it needs
		kubectl workload get catpl/error-rate`),
}

// now is the clock ages are measured with (tests fix it).
var now = time.Now

// Options holds what get needs.
type Options struct {
	PrintFlags *genericclioptions.PrintFlags
	// Printer prints the objects; nil draws the tree.
	Printer printers.ResourcePrinter
	// Wide (-o wide) draws the tree with every line whole; otherwise lines are cut to Width
	// columns (0: not cut).
	Wide  bool
	Width int

	// Watch reads the tree again every Interval and shows it when it changed.
	Watch    bool
	Interval time.Duration

	resolve.Object
	// Kube reads native objects (pods, ReplicaSets, Deployments, StatefulSets), as protobuf.
	Kube kubernetes.Interface

	genericiooptions.IOStreams
}

// NewCmdGet returns the `get` command.
func NewCmdGet(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, PrintFlags: genericclioptions.NewPrintFlags("")}
	cmd := verb.NewCommand(getText, completion.WorkloadNames(f, workload.Drawable...), func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run)
	resolve.AddFilenameFlag(cmd)
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = fmt.Sprintf("Output format. One of: (wide, %s). Without it, the tree cut to the terminal's width.", strings.Join(o.PrintFlags.AllowedFormats(), ", "))
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Show the tree again each time it changes, until interrupted.")
	cmd.Flags().DurationVar(&o.Interval, "interval", 2*time.Second, "With --watch, how often to read the tree.")
	return cmd
}

// Complete resolves the object, the namespace, the client and the printer.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if err := o.Object.Complete(f, cmd, args, nil, func(workload.Ref) error { return o.completePrinter() }, workload.Drawable...); err != nil {
		return err
	}
	var err error
	o.Kube, err = workload.KubeClient(f)
	return err
}

// completePrinter checks the output flags and makes the printer -o asks for.
func (o *Options) completePrinter() error {
	format := *o.PrintFlags.OutputFormat
	switch {
	case o.Watch && format != "" && format != "wide":
		return fmt.Errorf("--watch draws the tree: it cannot be combined with -o %s", format)
	case o.Interval <= 0:
		return fmt.Errorf("--interval must be positive, not %s", o.Interval)
	}
	switch format {
	case "":
		o.Width = textwidth.Width(o.Out, os.Getenv)
		return nil
	case "wide":
		o.Wide = true
		return nil
	}
	var err error
	o.Printer, err = o.PrintFlags.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		// The printers' list lacks wide, which the tree is.
		allowed := append(o.PrintFlags.AllowedFormats(), "wide")
		sort.Strings(allowed)
		return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", format, strings.Join(allowed, ","))
	}
	return err
}

// Run reads the workload and its tree, and prints it (with --watch, again each time it
// changes).
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Watch {
		d := status.DetectDisplay(o.Out, os.Getenv)
		return follow(ctx, o.Out, d.Terminal, d.Width, o.Interval, o.render)
	}
	tree, err := o.read(ctx)
	if err != nil {
		return err
	}
	if o.Printer != nil {
		list, err := tree.List()
		if err != nil {
			return err
		}
		return o.Printer.PrintObj(list, o.Out)
	}
	return PrintTree(o.Out, tree, o.Width)
}

// read reads the workload and its tree.
func (o *Options) read(ctx context.Context) (*workload.Node, error) {
	obj, err := o.Get(ctx)
	if err != nil {
		return nil, err
	}
	return workload.Tree(ctx, o.Client, o.Kube, o.Namespace, o.Ref, obj)
}

// render draws the tree as text.
func (o *Options) render(ctx context.Context) (string, error) {
	tree, err := o.read(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = PrintTree(&b, tree, o.Width)
	return b.String(), err
}

// follow shows what render draws, again every interval when it changed, until ctx ends (nil)
// or render fails (its error): on a terminal of columns columns in place (cursor up over the
// rows it drew, a line wider than the terminal counting for the rows it wrapped onto, erase,
// draw), elsewhere after a blank line.
func follow(ctx context.Context, out io.Writer, terminal bool, columns int, interval time.Duration, render func(context.Context) (string, error)) error {
	last, drawn := "", 0
	for {
		text, err := render(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if text != last {
			var b strings.Builder
			switch {
			case terminal && drawn > 0:
				fmt.Fprintf(&b, "\x1b[%dA\r\x1b[J", drawn)
			case !terminal && last != "":
				b.WriteString("\n")
			}
			b.WriteString(text)
			if _, err := io.WriteString(out, b.String()); err != nil {
				return err
			}
			last, drawn = text, textwidth.Rows(text, columns)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// PrintTree draws the tree as a table whose first column holds the branches, every line cut to
// width columns (0: not cut). The INFO column comes last, so that it is what a cut shortens.
func PrintTree(out io.Writer, root *workload.Node, width int) error {
	var buf bytes.Buffer
	w := printers.GetNewTabWriter(&buf)
	fmt.Fprintln(w, "NAME\tREADY\tSTATUS\tRESTARTS\tAGE\tINFO")
	row(w, "", root)
	var walk func(n *workload.Node, indent string)
	walk = func(n *workload.Node, indent string) {
		for i, c := range n.Children {
			branch, next := "├── ", "│   "
			if i == len(n.Children)-1 {
				branch, next = "└── ", "    "
			}
			row(w, indent+branch, c)
			walk(c, indent+next)
		}
	}
	walk(root, "")
	if err := w.Flush(); err != nil {
		return err
	}
	return writeTrimmed(out, buf.String(), width)
}

// writeTrimmed writes text without the padding the table leaves at the end of its lines, each
// line cut to width.
func writeTrimmed(out io.Writer, text string, width int) error {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = textwidth.Cut(strings.TrimRight(l, " "), width)
	}
	_, err := io.WriteString(out, strings.Join(lines, "\n")+"\n")
	return err
}

// lineBreaks are the line breaks of a cell, with the indentation around them: a PromQL query or a
// CEL condition written as a YAML block spans lines, and a row must stay one line of the table.
var lineBreaks = regexp.MustCompile(`[ \t]*[\r\n]+[ \t]*`)

func row(w io.Writer, prefix string, n *workload.Node) {
	age := ""
	if !n.Created.IsZero() {
		age = duration.HumanDuration(now().Sub(n.Created))
	}
	cells := []string{prefix + n.Name, n.Ready, n.Status, n.Restarts, age, n.Info}
	for i, c := range cells {
		cells[i] = lineBreaks.ReplaceAllString(strings.ReplaceAll(c, "\t", " "), " ")
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}
