// Package status implements `kubectl workload status`: where a rollout stands, once or followed
// with a watch until it is done.
package status

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/completion"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/resolve"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/verb"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// Exit codes of status, documented in its help.
const (
	// ExitComplete: the rollout is complete (or paused, with --success-on-pause).
	ExitComplete = 0
	// ExitFailed: the rollout is degraded, failed or was rolled back; or the command failed
	// (object not found, no access, …).
	ExitFailed = 1
	// ExitTimeout: --timeout passed before the rollout was complete.
	ExitTimeout = 2
	// ExitNotDone: without --watch, the rollout is still progressing or paused.
	ExitNotDone = 3
)

// statusText is what the `status` command shows.
var statusText = verb.Text{
	Use:   "status TYPE/NAME [-w] [--timeout=DURATION] [--success-on-pause]",
	Short: "Show a rollout's progress; -w follows it until done",
	Long: templates.LongDesc(`
		Show where a workload's rollout stands: a summary line, then one line per batch (Canary),
		per subset (UnitedDeployment) or per group of instances (TApp).

		With --watch, follow the workload with a watch (re-established when the connection drops)
		until the rollout is complete. On a terminal the progress is redrawn in place; otherwise
		one line is printed each time the summary changes, which suits CI logs. NO_COLOR turns
		colors off.

		On a terminal, a summary wider than the terminal goes on over the lines below its
		first, aligned under it. COLUMNS, when set, is the width to fit, also for a pipe or a
		file, which otherwise get the summary on one line.

		A rollout is paused when it waits for a person: paused, a Canary batch waiting for
		promote, or pods held on the old revision by a partition. --watch keeps waiting through a
		pause unless --success-on-pause is given, for pipelines with a manual gate.

		A status older than the spec (status.observedGeneration below metadata.generation) never
		counts as complete.

		Exit codes:

		* 0: the rollout is complete (or paused, with --success-on-pause)
		* 1: the rollout is degraded, failed or rolled back; or the command failed (workload not found, no access, ...)
		* 2: --timeout passed first
		* 3: without --watch, the rollout is still progressing, or paused

		A workload a Canary releases names that Canary and where its release stands. A DaemonSet
		with the OnDelete update strategy updates a pod only when it is deleted: it is paused
		until someone (or the Canary that holds it) deletes its old pods.

		Works on tapp, ud (UnitedDeployment), canary, deploy (Deployment), sts (StatefulSet) and
		ds (DaemonSet).`),

	Example: templates.Examples(`
		# Show where a canary release stands
		kubectl workload status canary/checkout

		# Follow a UnitedDeployment's rollout until every subset is updated
		kubectl workload status ud/orders -w

		# In a pipeline: wait at most 10 minutes, succeed when the release reaches a manual gate
		kubectl workload status canary/checkout -w --timeout=10m --success-on-pause`),
}

// Options holds what status needs.
type Options struct {
	Watch          bool
	Timeout        time.Duration
	SuccessOnPause bool

	resolve.Object
	Viewer  workload.StatusViewer
	Display Display

	// held says which Canary releases the Deployment, "" for none.
	held string

	genericiooptions.IOStreams
}

// NewCmdStatus returns the `status` command.
func NewCmdStatus(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams}
	cmd := verb.NewCommand(statusText, completion.WorkloadNames(f, workload.Viewable...), func(cmd *cobra.Command, args []string) error { return o.Complete(f, cmd, args) }, o.Run)
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Follow the rollout with a watch until it is complete (or degraded, or paused with --success-on-pause).")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "With --watch, how long to wait before giving up with exit code 2 (for example 30s, 10m). 0 waits forever.")
	cmd.Flags().BoolVar(&o.SuccessOnPause, "success-on-pause", false, "Treat a paused rollout (waiting for promote, a resume or a lower partition) as success: exit 0.")
	resolve.AddFilenameFlag(cmd)
	return cmd
}

// Complete resolves the object, the namespace, the client and how the output is displayed.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	return o.Object.Complete(f, cmd, args, nil, func(ref workload.Ref) error {
		if o.Timeout < 0 {
			return fmt.Errorf("--timeout must not be negative, got %v", o.Timeout)
		}
		if o.Timeout > 0 && !o.Watch {
			return fmt.Errorf("--timeout applies to --watch: add -w to wait for %s", ref)
		}
		var err error
		if o.Viewer, err = workload.StatusViewerFor(ref.Kind); err != nil {
			return err
		}
		o.Display = DetectDisplay(o.Out, os.Getenv)
		return nil
	}, workload.Viewable...)
}

// Run reads the object once and, with --watch, follows it until the rollout is settled.
func (o *Options) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	obj, err := o.read(ctx)
	if err != nil {
		return err
	}
	st, err := o.status(ctx, obj)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Ref, err)
	}
	st = o.note(st)
	if !o.Watch {
		if err := o.Display.PrintOnce(o.Out, o.Ref.String(), st); err != nil {
			return err
		}
		return o.verdict(st, false)
	}

	p := o.Display.NewProgress(o.Out, o.Ref.String())
	p.Show(st)
	if o.settled(st) {
		return o.verdict(st, true)
	}
	wctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, o.Timeout)
	defer cancel()
	last := st
	_, err = watchtools.UntilWithSync(wctx, o.listWatch(), &unstructured.Unstructured{}, o.present, func(e watch.Event) (bool, error) {
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok || u.GetName() != o.Ref.Name {
			return false, nil
		}
		switch e.Type {
		case watch.Added, watch.Modified:
			st, err := o.status(wctx, u)
			if err != nil {
				return false, fmt.Errorf("%s: %w", o.Ref, err)
			}
			st = o.note(st)
			p.Show(st)
			last = st
			return o.settled(st), nil
		case watch.Deleted:
			return false, fmt.Errorf("%s was deleted while its rollout was being followed", o.Ref)
		}
		return false, nil
	})
	switch {
	case err == nil:
		return o.verdict(last, true)
	case wctx.Err() == context.DeadlineExceeded && (wait.Interrupted(err) || errors.Is(err, context.DeadlineExceeded)):
		return &ExitError{Code: ExitTimeout, Msg: fmt.Sprintf("%s: timed out after %v waiting for the rollout (%s)", o.Ref, o.Timeout, last.Phase)}
	}
	return err
}

// read reads the object and, at the same time, the Canary that releases it, if any (o.held): the
// two requests share one round trip to the API server instead of following each other
// (bench/RESULTS.md, "Plugin latency against kubectl"). The Canaries are a note on the status:
// an error reading them (none served, no access) leaves it out, as if none released the object.
func (o *Options) read(ctx context.Context) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var h *workload.Holder
	done := make(chan struct{})
	go func() {
		defer close(done)
		h, _ = workload.CanaryHolding(ctx, o.Client, o.Namespace, o.Ref)
	}()
	obj, err := o.Get(ctx)
	if err != nil {
		cancel() // the note is of no use without the object
	}
	<-done
	if err != nil {
		return nil, err
	}
	// A workload a Canary releases says so: its rollout is the Canary's to drive.
	if h != nil {
		at := ""
		if h.Step != "" {
			at = ", " + h.Step
		}
		o.held = fmt.Sprintf("%s %s of canary/%s%s: see kubectl workload status canary/%s", h.Role, o.Ref.Kind.Name, h.Canary, at, h.Canary)
	}
	return obj, nil
}

// status is the object's rollout status, with its target read too when that says more (the
// clusters of a Canary's waves: workload.TargetStatusViewer).
func (o *Options) status(ctx context.Context, obj *unstructured.Unstructured) (workload.RolloutStatus, error) {
	if v, ok := o.Viewer.(workload.TargetStatusViewer); ok {
		return v.StatusWithTarget(ctx, o.Client, o.Namespace, obj)
	}
	return o.Viewer.Status(obj)
}

// note adds to a status what the object is part of (the Canary that releases a Deployment).
func (o *Options) note(st workload.RolloutStatus) workload.RolloutStatus {
	if o.held != "" {
		st.Summary += " (the " + o.held + ")"
	}
	return st
}

// listWatch lists and watches the one object, by name, as kubectl rollout status does.
func (o *Options) listWatch() cache.ListerWatcher {
	sel := fields.OneTermEqualSelector("metadata.name", o.Ref.Name).String()
	ri := o.Client.Resource(o.Ref.Kind.Resource).Namespace(o.Namespace)
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel
			return ri.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return ri.Watch(ctx, opts)
		},
	}, o.Client)
}

// present fails when the object disappeared between the first read and the watch.
func (o *Options) present(store cache.Store) (bool, error) {
	for _, item := range store.List() {
		if u, ok := item.(*unstructured.Unstructured); ok && u.GetName() == o.Ref.Name {
			return false, nil
		}
	}
	return false, fmt.Errorf("%s was deleted while its rollout was being followed", o.Ref)
}

// settled reports whether following the rollout can stop.
func (o *Options) settled(st workload.RolloutStatus) bool {
	return st.Done() || st.Degraded() || (st.Paused() && o.SuccessOnPause)
}

// verdict turns the last status into the exit code.
func (o *Options) verdict(st workload.RolloutStatus, watched bool) error {
	switch {
	case st.Done(), st.Paused() && o.SuccessOnPause:
		return nil
	case st.Degraded():
		return &ExitError{Code: ExitFailed, Msg: fmt.Sprintf("%s: rollout %s", o.Ref, lower(st.Phase))}
	case !watched:
		return &ExitError{Code: ExitNotDone}
	}
	return &ExitError{Code: ExitFailed, Msg: fmt.Sprintf("%s: stopped following the rollout while it was %s", o.Ref, lower(st.Phase))}
}

// ExitError ends the command with a given exit code; cmdutil.CheckErr honours it (as
// k8s.io/utils/exec.ExitError). An empty message prints nothing.
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string {
	if e.Msg == "" {
		return ""
	}
	return "error: " + e.Msg
}
func (e *ExitError) String() string  { return e.Error() }
func (e *ExitError) Exited() bool    { return true }
func (e *ExitError) ExitStatus() int { return e.Code }
