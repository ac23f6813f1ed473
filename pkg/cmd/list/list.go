// Package list implements `kubectl workload list`: every TApp, UnitedDeployment and Canary of a
// namespace (or of all namespaces) in one table.
package list

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	Short: "List every TApp, UnitedDeployment and Canary with its rollout status",
	Long: templates.LongDesc(`
		List every TApp, UnitedDeployment and Canary of the namespace (or, with -A, of every
		namespace) in one table: desired, ready and updated pods, the rollout's status and age.
		-o wide adds what the rollout is doing or waiting for.

		For a Canary, READY counts available pods across the stable and the canary Deployment
		and UPDATED the canary Deployment's replicas; STATUS is its phase.`),

	Example: templates.Examples(`
		# Every workload of the current namespace
		kubectl workload list

		# Every workload of the cluster, with what each rollout waits for
		kubectl workload list -A -o wide

		# The names of the workloads labelled team=payments, for scripting
		kubectl workload list -l team=payments -o name`),
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
	var items []item
	var missing []string
	for _, k := range workload.Listable {
		list, err := o.Client.Resource(k.Resource).Namespace(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, k.Resource.GroupResource().String())
			continue
		case err != nil:
			return fmt.Errorf("listing %s: %w", k.Resource.GroupResource(), err)
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
	if len(missing) == len(workload.Listable) {
		return fmt.Errorf("the cluster does not serve %s: install the CRDs with 'kubectl workload install'", strings.Join(missing, ", "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(o.ErrOut, "Warning: the cluster does not serve %s; run 'kubectl workload install' to update the CRDs\n", strings.Join(missing, ", "))
	}
	rank := map[string]int{}
	for i, k := range workload.Listable {
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

	if o.Printer != nil {
		objs := make([]*unstructured.Unstructured, len(items))
		for i, it := range items {
			objs[i] = it.obj
		}
		return o.Printer.PrintObj(workload.AsList(objs), o.Out)
	}
	if len(items) == 0 {
		if o.AllNamespaces {
			fmt.Fprintln(o.ErrOut, "No resources found")
		} else {
			fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", o.Namespace)
		}
		return nil
	}
	return o.printTable(items)
}

func (o *Options) printTable(items []item) error {
	var buf bytes.Buffer
	w := printers.GetNewTabWriter(&buf)
	var head []string
	if o.AllNamespaces {
		head = append(head, "NAMESPACE")
	}
	head = append(head, "KIND", "NAME", "DESIRED", "READY", "UPDATED", "STATUS", "AGE")
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
		age := "<unknown>"
		if ts := it.obj.GetCreationTimestamp(); !ts.IsZero() {
			age = duration.HumanDuration(now().Sub(ts.Time))
		}
		cells = append(cells, it.kind.Name, it.obj.GetName(),
			strconv.Itoa(int(counts.Desired)), strconv.Itoa(int(counts.Ready)), strconv.Itoa(int(counts.Updated)), st.Phase, age)
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
