package install

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
)

// installText is what the `install` command shows.
var installText = verb.Text{
	Use:   "install [--image=IMAGE] [--crds-only] [--dry-run=client|server]",
	Short: "Install the CRDs and the workload-agent into the cluster",
	Long: templates.LongDesc(`
		Install the CustomResourceDefinitions of TApp, UnitedDeployment and Canary and the
		workload-agent that runs them: the workload-system namespace, the agent's
		ServiceAccount, ClusterRole and ClusterRoleBinding, a Role for its leader election
		Lease and one to read its notification ConfigMap and Secret, its Deployment and a
		metrics Service. These are the manifests of config/ in the
		repository, embedded in the plugin.

		Objects are applied with server-side apply (field manager kubectl-workload), so running
		install again upgrades them and leaves fields other managers own alone. A field another
		manager owns is a conflict: --force-conflicts takes it over.

		The agent's image defaults to the one released with this plugin; --image picks another
		(a mirror, or a build of your own). --crds-only installs just the CRDs, for clusters where
		the agent is deployed some other way.

		Before it returns, install waits (up to --timeout) until the API server serves the CRDs
		(condition Established), so that workloads can be applied right after it.

		--dry-run=client prints the manifests as YAML instead of applying them;
		--dry-run=server sends them for validation without persisting them.`),

	Example: templates.Examples(`
		# Install the CRDs and the agent
		kubectl workload install

		# Review what would be applied
		kubectl workload install --dry-run=client

		# Use an image from your own registry
		kubectl workload install --image=registry.example.com/workload-agent:v0.1.0

		# Only the CRDs
		kubectl workload install --crds-only`),
}

// InstallOptions holds what install needs.
type InstallOptions struct {
	Image          string
	CRDsOnly       bool
	ForceConflicts bool

	// clusterOptions' Timeout bounds the wait for the CRDs to be established.
	clusterOptions
}

// NewCmdInstall returns the `install` command.
func NewCmdInstall(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &InstallOptions{clusterOptions: clusterOptions{IOStreams: streams}}
	cmd := o.newCommand(installText, func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run,
		time.Minute, "How long to wait for the CRDs to be established before giving up.")
	cmd.Flags().StringVar(&o.Image, "image", DefaultImage(), "Image of the workload-agent.")
	cmd.Flags().BoolVar(&o.CRDsOnly, "crds-only", false, "Install only the CustomResourceDefinitions, not the agent.")
	cmd.Flags().BoolVar(&o.ForceConflicts, "force-conflicts", false, "Take over fields that another field manager owns instead of failing on the conflict.")
	return cmd
}

// Complete checks the arguments and resolves the dry-run mode and the client.
func (o *InstallOptions) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.complete(f, cmd, args, "install", func() error {
		if o.Image == "" {
			return fmt.Errorf("--image must name an image")
		}
		return nil
	}, false)
}

// Run applies the manifests one by one, printing a line for each.
func (o *InstallOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	objs, err := Manifests(o.Image, o.CRDsOnly)
	if err != nil {
		return err
	}
	if o.DryRun == cmdutil.DryRunClient {
		return printYAML(o.Out, objs)
	}
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: o.ForceConflicts}
	suffix := "serverside-applied"
	if o.DryRun == cmdutil.DryRunServer {
		opts.DryRun = []string{metav1.DryRunAll}
		suffix += " (server dry run)"
	}
	var pending []*unstructured.Unstructured // CRDs not yet established
	for _, obj := range objs {
		ri, err := o.resourceFor(obj)
		if err != nil {
			return err
		}
		applied, err := ri.Apply(ctx, obj.GetName(), obj, opts)
		if err != nil {
			return fmt.Errorf("applying %s: %w", displayName(obj), err)
		}
		if _, err := fmt.Fprintf(o.Out, "%s %s\n", displayName(obj), suffix); err != nil {
			return err
		}
		if obj.GetKind() == "CustomResourceDefinition" && !established(applied) {
			pending = append(pending, obj)
		}
	}
	if o.DryRun == cmdutil.DryRunServer {
		return nil
	}
	return o.waitEstablished(ctx, pending)
}

// waitEstablished polls the CRDs the apply did not report established yet: right after a
// create, the API server needs a moment before it serves a new kind, and a workload applied in
// that moment fails with "no matches for kind".
func (o *InstallOptions) waitEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		ri, err := o.resourceFor(crd)
		if err != nil {
			return err
		}
		var last *unstructured.Unstructured
		err = wait.PollUntilContextTimeout(ctx, pollInterval, o.Timeout, true, func(ctx context.Context) (bool, error) {
			got, err := ri.Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("reading %s: %w", displayName(crd), err)
			}
			last = got
			return established(got), nil
		})
		if wait.Interrupted(err) {
			return fmt.Errorf("timed out after %v waiting for %s to be established%s", o.Timeout, displayName(crd), conditionSummary(last))
		}
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(o.Out, "%s established\n", displayName(crd)); err != nil {
			return err
		}
	}
	return nil
}

// established reports whether a CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	return conditionStatus(crd, "Established") == "True"
}

func conditionStatus(crd *unstructured.Unstructured, condType string) string {
	if crd == nil {
		return ""
	}
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]interface{})
		if m["type"] == condType {
			status, _ := m["status"].(string)
			return status
		}
	}
	return ""
}

// conditionSummary says why a CRD is not established, from its conditions (NamesAccepted False
// when a name clashes with another CRD's, for example).
func conditionSummary(crd *unstructured.Unstructured) string {
	if crd == nil {
		return ""
	}
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	var parts []string
	for _, c := range conditions {
		m, _ := c.(map[string]interface{})
		if m["status"] != "True" {
			parts = append(parts, fmt.Sprintf("%v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// printYAML writes the objects as one YAML stream.
func printYAML(out io.Writer, objs []*unstructured.Unstructured) error {
	for i, obj := range objs {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(out, "---\n"); err != nil {
				return err
			}
		}
		if _, err := out.Write(data); err != nil {
			return err
		}
	}
	return nil
}
