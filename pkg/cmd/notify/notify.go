// Package notify implements `kubectl workload notify test`: send one notification of a Canary
// now, through the cluster's notification setup, to check it (docs/notifications.md).
package notify

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/config"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/completion"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/resolve"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// testText is what the `notify test` command shows.
var testText = verb.Text{
	Use:   "test canary/NAME --trigger TRIGGER [--dry-run=client]",
	Short: "Send one notification of a Canary now, to check the notification setup",
	Long: templates.LongDesc(`
		Send the notification a trigger would send for a Canary, now, to every destination
		that subscribes to that trigger (the Canary's annotations and its namespace's:
		notifications.apps.workload.dev/subscribe.<trigger>.<service>), through the services of
		the ConfigMap workload-notifications and the Secret workload-notifications-secret in the
		agent's namespace. The message is rendered from the Canary as it is, whether or not the
		trigger fires on it now.

		Nothing is recorded on the Canary: the agent still sends the trigger's notification
		when its event happens. With --dry-run=client the messages are printed, not sent.

		Triggers: ` + strings.Join(notify.TriggerNames(), ", ") + ` (the "on-" may be
		left out).`),
	Example: templates.Examples(`
		# Check that a paused release reaches the team's channel
		kubectl workload notify test canary/checkout --trigger paused

		# Show the message without sending it
		kubectl workload notify test canary/checkout --trigger on-rolled-back --dry-run=client`),
}

// Options holds what `notify test` needs.
type Options struct {
	Trigger        string
	AgentNamespace string
	DryRun         string

	resolve.Object
	trigger notify.Trigger
	kube    kubernetes.Interface
	// HTTP sends the notifications (tests replace it).
	HTTP *http.Client

	genericiooptions.IOStreams
}

// NewCmdNotify returns the `notify` command and its subcommand `test`.
func NewCmdNotify(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Work with release notifications (webhooks, Slack, Microsoft Teams)",
		Long: templates.LongDesc(`
			Work with the notifications the workload-agent sends about Canary releases. See
			docs/notifications.md for the ConfigMap, the Secret and the subscription
			annotations.`),
		Run: func(cmd *cobra.Command, args []string) {
			cmdutil.CheckErr(cmdutil.UsageErrorf(cmd, "name a subcommand: test"))
		},
	}
	cmd.AddCommand(NewCmdTest(f, streams))
	return cmd
}

// NewCmdTest returns the `notify test` command.
func NewCmdTest(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, HTTP: &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	cmd := verb.NewCommand(testText, completion.WorkloadNames(f, workload.Canary), func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run)
	cmd.Flags().StringVar(&o.Trigger, "trigger", "", "The trigger whose notification to send: "+strings.Join(notify.TriggerNames(), ", ")+".")
	cmd.Flags().StringVar(&o.AgentNamespace, "agent-namespace", config.AgentNamespace, "The namespace of the workload-agent, which holds the notification ConfigMap and Secret.")
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "none", `"client" prints the messages and where they would go instead of sending them.`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	resolve.AddFilenameFlag(cmd)
	return cmd
}

// Complete resolves the Canary, the trigger and the clients.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	err := o.Object.Complete(f, cmd, args, nil, func(ref workload.Ref) error {
		if o.Trigger == "" {
			return fmt.Errorf("--trigger is required: one of %s", strings.Join(notify.TriggerNames(), ", "))
		}
		t, ok := notify.TriggerNamed(o.Trigger)
		if !ok {
			return fmt.Errorf("unknown trigger %q: one of %s", o.Trigger, strings.Join(notify.TriggerNames(), ", "))
		}
		if o.DryRun != "none" && o.DryRun != "client" {
			return fmt.Errorf(`--dry-run must be "none" or "client", got %q`, o.DryRun)
		}
		o.trigger = t
		return nil
	}, workload.Canary)
	if err != nil {
		return err
	}
	o.kube, err = workload.KubeClient(f)
	return err
}

// Run sends the notification to every subscriber of the trigger.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cn, subs, err := o.read(ctx)
	if err != nil {
		return err
	}
	dests := subs[o.trigger.Name]
	if len(dests) == 0 {
		return fmt.Errorf("%s: nothing subscribes to %s: annotate the Canary or its namespace with %s%s.<service>", o.Ref, o.trigger.Name, notify.SubscribePrefix, o.trigger.Name)
	}
	cfg, err := o.config(ctx)
	if err != nil {
		return err
	}
	tmpl, err := cfg.TemplateFor(o.trigger.Name)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Ref, err)
	}
	m, err := tmpl.Render(notify.NewData(cn, o.trigger))
	if err != nil {
		return fmt.Errorf("%s: %w", o.Ref, err)
	}
	m.ID = "test-" + string(cn.UID)
	if o.DryRun == "client" {
		return o.print(m, dests)
	}
	var failed []string
	for _, d := range dests {
		if err := cfg.Deliver(ctx, o.HTTP, d, m); err != nil {
			failed = append(failed, fmt.Sprintf("%s to %s: %v", o.trigger.Name, d, err))
			continue
		}
		fmt.Fprintf(o.Out, "%s: %s sent to %s\n", o.Ref, o.trigger.Name, d)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s: %s", o.Ref, strings.Join(failed, "; "))
	}
	return nil
}

// read returns the Canary and the subscriptions of it and its namespace.
func (o *Options) read(ctx context.Context) (*v1alpha1.Canary, notify.Subscriptions, error) {
	obj, err := o.Get(ctx)
	if err != nil {
		return nil, nil, err
	}
	cn := &v1alpha1.Canary{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cn); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", o.Ref, err)
	}
	ns, err := o.kube.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("reading namespace %s for its subscriptions: %w", o.Namespace, err)
	}
	subs, err := notify.ParseSubscriptions(cn.Annotations, ns.Annotations)
	if err != nil {
		fmt.Fprintf(o.ErrOut, "warning: %s: subscriptions ignored: %v\n", o.Ref, err)
	}
	return cn, subs, nil
}

// config reads the ConfigMap and the Secret of the agent's namespace.
func (o *Options) config(ctx context.Context) (*notify.Config, error) {
	cm, err := o.kube.CoreV1().ConfigMaps(o.AgentNamespace).Get(ctx, notify.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s/%s (--agent-namespace): %w", o.AgentNamespace, notify.ConfigMapName, err)
	}
	var secret *corev1.Secret
	if o.DryRun != "client" {
		secret, err = o.kube.CoreV1().Secrets(o.AgentNamespace).Get(ctx, notify.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			secret, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading Secret %s/%s: %w", o.AgentNamespace, notify.SecretName, err)
		}
	} else {
		secret = placeholders(cm)
	}
	return notify.LoadConfig(cm, secret)
}

// placeholders stands for the Secret in a dry run: every $key the ConfigMap names, as
// "<$key>", so that the Secret is not read and nothing of it can be printed.
func placeholders(cm *corev1.ConfigMap) *corev1.Secret {
	s := &corev1.Secret{StringData: map[string]string{}}
	for _, v := range cm.Data {
		for _, ref := range notify.SecretRefs(v) {
			s.StringData[ref[1:]] = "https://secret.invalid/" + ref[1:]
		}
	}
	return s
}

// print shows what would be sent.
func (o *Options) print(m notify.Message, dests []notify.Destination) error {
	names := make([]string, len(dests))
	for i, d := range dests {
		names[i] = d.String()
	}
	w := o.Out
	fmt.Fprintf(w, "%s: %s would be sent to %s (dry run)\n", o.Ref, o.trigger.Name, strings.Join(names, ", "))
	fmt.Fprintf(w, "title: %s\n", m.Title)
	_, err := io.WriteString(w, "message:\n  "+strings.ReplaceAll(m.Text, "\n", "\n  ")+"\n")
	return err
}
