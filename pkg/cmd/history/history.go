// Package history implements `kubectl workload history`: the revisions undo can go back to.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/completion"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/resolve"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// historyText is what the `history` command shows.
var historyText = verb.Text{
	Use:   "history TYPE/NAME [--revision N] [-o json|yaml]",
	Short: "List the revisions of a workload's template",
	Long: templates.LongDesc(`
		List the revisions of a workload's template, the ones undo can go back to, oldest
		first, with the current one marked.

		* ud (UnitedDeployment): its ControllerRevisions, selected by the label apps.workload.dev/united-deployment=NAME.
		* sts (StatefulSet) and ds (DaemonSet): its ControllerRevisions, selected by the workload's selector.
		* deploy (Deployment): its ReplicaSets, selected by the Deployment's selector, numbered by their deployment.kubernetes.io/revision annotation.
		* tapp: its ControllerRevisions, selected by the labels app.kubernetes.io/managed-by=workload-agent and tapp.apps.workload.dev/name=NAME; each holds spec.template and spec.templatePool (pool images shown as ENTRY/CONTAINER=IMAGE).

		Only objects controlled by the workload are shown; lists use label selectors, never a
		list of the whole namespace. --revision N shows one revision's pod template; -o json or
		-o yaml prints the revisions with their full templates.`),

	Example: templates.Examples(`
		# List the revisions of a UnitedDeployment
		kubectl workload history ud/orders

		# Show the pod template of revision 3
		kubectl workload history ud/orders --revision 3

		# The revisions of a Deployment, as YAML
		kubectl workload history deploy/front -o yaml`),
}

// Options holds what history needs.
type Options struct {
	Revision int64
	Output   string

	resolve.Object

	genericiooptions.IOStreams
}

// NewCmdHistory returns the `history` command.
func NewCmdHistory(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := verb.NewCommand(historyText, completion.WorkloadNames(f, workload.WithHistory...), func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(f, cmd, args); err != nil {
			return err
		}
		return o.Validate()
	}, o.Run)
	cmd.Flags().Int64Var(&o.Revision, "revision", 0, "Show the details of this revision")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml")
	return cmd
}

// Complete resolves the object, the namespace and the client.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.Object.Complete(f, cmd, args, nil, nil, workload.WithHistory...)
}

// Validate checks the flags.
func (o *Options) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("unknown output format %q: use json or yaml", o.Output)
	}
	if o.Revision < 0 {
		return fmt.Errorf("--revision must be a revision number, not %d", o.Revision)
	}
	return nil
}

// list is the machine-readable form of a history.
type list struct {
	Workload  string              `json:"workload"`
	Revisions []workload.Revision `json:"revisions"`
}

// Run reads the workload and its revisions and prints them.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	obj, err := o.Get(ctx)
	if err != nil {
		return err
	}
	revs, err := workload.Revisions(ctx, o.Client, o.Namespace, o.Ref, obj)
	if err != nil {
		return err
	}
	if o.Revision != 0 {
		r, err := workload.FindRevision(o.Ref, revs, o.Revision)
		if err != nil {
			return err
		}
		if o.Output != "" {
			return o.print(r)
		}
		return o.describe(r)
	}
	if o.Output != "" {
		if revs == nil {
			revs = []workload.Revision{}
		}
		return o.print(list{Workload: o.Ref.String(), Revisions: revs})
	}
	if len(revs) == 0 {
		_, err := fmt.Fprintf(o.Out, "%s has no revisions\n", o.Ref)
		return err
	}
	w := printers.GetNewTabWriter(o.Out)
	fmt.Fprintln(w, "REVISION\tCURRENT\tNAME\tIMAGES\tCHANGE-CAUSE")
	for _, r := range revs {
		current, cause := "", r.ChangeCause
		if r.Current {
			current = "*"
		}
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", r.Number, current, r.Name, strings.Join(r.Images, ","), cause)
	}
	return w.Flush()
}

func (o *Options) print(v interface{}) error {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	if o.Output == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = o.Out.Write(data)
	return err
}

// describe prints one revision for a person: a header line, then its pod template as YAML.
func (o *Options) describe(r workload.Revision) error {
	tpl, err := workload.RevisionPodTemplate(o.Ref, r)
	if err != nil {
		return fmt.Errorf("%s: revision %d: %w", o.Ref, r.Number, err)
	}
	state := ""
	if r.Current {
		state = ", current"
	}
	fmt.Fprintf(o.Out, "%s revision %d (%s%s)\n", o.Ref, r.Number, r.Name, state)
	if r.ChangeCause != "" {
		fmt.Fprintf(o.Out, "Change cause: %s\n", r.ChangeCause)
	}
	data, err := yaml.Marshal(tpl)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "Pod template:")
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		fmt.Fprintln(o.Out, "  "+line)
	}
	return nil
}
