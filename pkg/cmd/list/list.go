// Package list implements `kubectl workload list`: every TApp, UnitedDeployment and Canary of a
// namespace (or of all namespaces) in one table, then the analysis templates its Canaries may
// use in another.
package list

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// listText is what the `list` command shows.
var listText = verb.Text{
	Use:   "list [-A] [-l SELECTOR] [-o wide|json|yaml|name]",
	Short: "List every TApp, UnitedDeployment and Canary with its rollout status, and the analysis templates",
	Long: templates.LongDesc(`
		List every TApp, UnitedDeployment and Canary of the namespace (or, with -A, of every
		namespace) in one table: desired, ready and updated pods, the rollout's status and age.
		-o wide adds what the rollout is doing or waiting for.

		For a Canary, READY counts available pods across the stable and the canary Deployment
		and UPDATED the canary Deployment's replicas; STATUS is its phase.

		Then, in a second table, the analysis templates the namespace's Canaries may use: its
		AnalysisTemplates and every ClusterAnalysisTemplate, each with its checks (and their
		providers) and its arguments (with their defaults).`),

	Example: templates.Examples(`
		# Every workload of the current namespace
		kubectl workload list

		# Every workload of the cluster, with what each rollout waits for
		kubectl workload list -A -o wide

		# The names of the workloads labelled team=payments, for scripting
		kubectl workload list -l team=payments -o name

		# Draw one template's arguments and checks
		kubectl workload get catpl/error-rate`),
}

// now is the clock ages are measured with (tests fix it).
var now = time.Now

// Options holds what list needs.
type Options struct {
	PrintFlags    *genericclioptions.PrintFlags
	AllNamespaces bool
	Selector      string
	Wide          bool
	// Printer prints the objects; nil prints the table.
	Printer printers.ResourcePrinter

	Namespace string
	Client    dynamic.Interface

	genericiooptions.IOStreams
}

// NewCmdList returns the `list` command.
func NewCmdList(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, PrintFlags: genericclioptions.NewPrintFlags("")}
	cmd := verb.NewCommand(listText, nil, func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run)
	cmd.Aliases = []string{"ls"}
	o.PrintFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "Output format. One of: (wide, " + strings.Join(o.PrintFlags.AllowedFormats(), ", ") + ")."
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the workloads of every namespace.")
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "Only list workloads matching this label selector (for example team=payments).")
	return cmd
}

// Complete resolves the namespace, the client and the printer.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("list takes no arguments, got %v: use -n NAMESPACE, -A or -l SELECTOR to choose what it lists", args)
	}
	// Checked here, not by the API server: its refusal would name the first kind listed, not the flag.
	if _, err := labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("-l %q: not a label selector (%v)", o.Selector, err)
	}
	var err error
	switch format := *o.PrintFlags.OutputFormat; format {
	case "":
	case "wide":
		o.Wide = true
	default:
		if o.Printer, err = o.PrintFlags.ToPrinter(); genericclioptions.IsNoCompatiblePrinterError(err) {
			return fmt.Errorf("unknown output format %q: use one of wide, %s", format, strings.Join(o.PrintFlags.AllowedFormats(), ", "))
		} else if err != nil {
			return err
		}
	}
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return err
	}
	if o.AllNamespaces {
		o.Namespace = metav1.NamespaceAll
	}
	o.Client, err = f.DynamicClient()
	return err
}

type item struct {
	kind workload.Kind
	obj  *unstructured.Unstructured
}

// Run lists each kind and prints them together.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	items, missing, err := o.listKinds(ctx, workload.Listable)
	if err != nil {
		return err
	}
	if len(missing) == len(workload.Listable) {
		return fmt.Errorf("the cluster does not serve %s: install the CRDs with 'kubectl workload install'", strings.Join(missing, ", "))
	}
	catalogue, missingTemplates, err := o.listKinds(ctx, workload.Catalogue)
	if err != nil {
		return err
	}
	if missing = append(missing, missingTemplates...); len(missing) > 0 {
		fmt.Fprintf(o.ErrOut, "Warning: the cluster does not serve %s; run 'kubectl workload install' to update the CRDs\n", strings.Join(missing, ", "))
	}
	sortItems(items)
	sortItems(catalogue)

	if o.Printer != nil {
		var objs []*unstructured.Unstructured
		for _, it := range append(items, catalogue...) {
			objs = append(objs, it.obj)
		}
		return o.Printer.PrintObj(workload.AsList(objs), o.Out)
	}
	if len(items) == 0 && len(catalogue) == 0 {
		if o.AllNamespaces {
			fmt.Fprintln(o.ErrOut, "No resources found")
		} else {
			fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", o.Namespace)
		}
		return nil
	}
	if len(items) > 0 {
		if err := o.printTable(items); err != nil {
			return err
		}
	}
	return o.printCatalogue(catalogue, len(items) > 0)
}

// listKinds lists the objects of kinds (a cluster-scoped kind's every object, whatever the
// namespace), and names the resources the cluster does not serve.
func (o *Options) listKinds(ctx context.Context, kinds []workload.Kind) ([]item, []string, error) {
	var items []item
	var missing []string
	for _, k := range kinds {
		list, err := workload.In(o.Client, k, o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, k.Resource.GroupResource().String())
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("listing %s: %w", k.Resource.GroupResource(), err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if obj.GetKind() == "" {
				obj.SetAPIVersion(k.Resource.GroupVersion().String())
				obj.SetKind(k.Name)
			}
			items = append(items, item{k, obj})
		}
	}
	return items, missing, nil
}

// sortItems orders items by namespace, then kind (in the order of workload.Kinds), then name.
func sortItems(items []item) {
	rank := map[string]int{}
	for i, k := range slices.Concat(workload.Listable, workload.Catalogue) {
		rank[k.Name] = i
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.obj.GetNamespace() != b.obj.GetNamespace() {
			return a.obj.GetNamespace() < b.obj.GetNamespace()
		}
		if a.kind.Name != b.kind.Name {
			return rank[a.kind.Name] < rank[b.kind.Name]
		}
		return a.obj.GetName() < b.obj.GetName()
	})
}

func (o *Options) printTable(items []item) error {
	var buf bytes.Buffer
	w := printers.GetNewTabWriter(&buf)
	var head []string
	if o.AllNamespaces {
		head = append(head, "NAMESPACE")
	}
	head = append(head, "KIND", "NAME", "DESIRED", "READY", "UPDATED", "STATUS")
	// CLUSTERS (reachable of member clusters) only when some UnitedDeployment spans clusters:
	// a list without any keeps its columns.
	fleet := slices.ContainsFunc(items, func(it item) bool { return workload.ClustersOf(it.kind, it.obj) != "" })
	if fleet {
		head = append(head, "CLUSTERS")
	}
	head = append(head, "AGE")
	if o.Wide {
		head = append(head, "MESSAGE")
	}
	fmt.Fprintln(w, strings.Join(head, "\t"))
	for _, it := range items {
		var cells []string
		if o.AllNamespaces {
			cells = append(cells, it.obj.GetNamespace())
		}
		counts, err := workload.ReplicasOf(it.kind, it.obj)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", it.kind.Short, it.obj.GetName(), err)
		}
		st, err := workload.RolloutStatusOf(it.kind, it.obj)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", it.kind.Short, it.obj.GetName(), err)
		}
		cells = append(cells, it.kind.Name, it.obj.GetName(),
			strconv.Itoa(int(counts.Desired)), strconv.Itoa(int(counts.Ready)), strconv.Itoa(int(counts.Updated)), st.Phase)
		if fleet {
			cells = append(cells, orDash(workload.ClustersOf(it.kind, it.obj)))
		}
		cells = append(cells, age(it.obj))
		if o.Wide {
			cells = append(cells, strings.ReplaceAll(st.Summary, "\t", " "))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := io.Copy(o.Out, &buf)
	return err
}

// printCatalogue prints the kinds without a rollout (the analysis templates), after a blank line
// when a table came before: one table for each set of columns, as kubectl get prints one per
// kind.
func (o *Options) printCatalogue(items []item, after bool) error {
	for len(items) > 0 {
		cols := workload.ColumnsOf(items[0].kind)
		var table, rest []item
		for _, it := range items {
			if strings.Join(workload.ColumnsOf(it.kind), "\t") == strings.Join(cols, "\t") {
				table = append(table, it)
			} else {
				rest = append(rest, it)
			}
		}
		if after {
			fmt.Fprintln(o.Out)
		}
		if err := o.printRows(table, cols); err != nil {
			return err
		}
		items, after = rest, true
	}
	return nil
}

func (o *Options) printRows(items []item, cols []string) error {
	var buf bytes.Buffer
	w := printers.GetNewTabWriter(&buf)
	var head []string
	if o.AllNamespaces {
		head = append(head, "NAMESPACE")
	}
	head = append(append(append(head, "KIND", "NAME"), cols...), "AGE")
	fmt.Fprintln(w, strings.Join(head, "\t"))
	for _, it := range items {
		var cells []string
		if o.AllNamespaces {
			cells = append(cells, it.obj.GetNamespace())
		}
		row, err := workload.RowOf(it.kind, it.obj)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", it.kind.Short, it.obj.GetName(), err)
		}
		cells = append(append(append(cells, it.kind.Name, it.obj.GetName()), row...), age(it.obj))
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "\t", " ")
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := io.Copy(o.Out, &buf)
	return err
}

func age(obj *unstructured.Unstructured) string {
	if ts := obj.GetCreationTimestamp(); !ts.IsZero() {
		return duration.HumanDuration(now().Sub(ts.Time))
	}
	return "<unknown>"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
