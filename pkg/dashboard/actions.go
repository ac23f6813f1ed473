package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/mutate"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/promote"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/undo"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// Action is a button of the release page; each one is a verb of the plugin, run by the verb's
// own code (pkg/cmd/promote and pkg/cmd/undo, pkg/workload's decisions through mutate.Target for
// the others): the same patches, preconditions and refusals as on the command line.
type Action string

const (
	Promote     Action = "promote"
	PromoteFull Action = "promote-full"
	Pause       Action = "pause"
	Resume      Action = "resume"
	Abort       Action = "abort"
	Retry       Action = "retry"
	Undo        Action = "undo"
)

// actionKinds are the kinds each button acts on. Promote is offered on a Canary only: a
// UnitedDeployment's promote names subsets, which `kubectl workload promote --subset` does.
var actionKinds = map[Action][]workload.Kind{
	Promote:     {workload.Canary},
	PromoteFull: {workload.Canary},
	Pause:       workload.Pausable,
	Resume:      workload.Pausable,
	Abort:       workload.Abortable,
	Retry:       workload.Retryable,
	Undo:        workload.WithHistory,
}

// Actions lists the buttons in the order the page shows them.
var Actions = []Action{Promote, PromoteFull, Pause, Resume, Abort, Retry, Undo}

// Button is an action as the release page offers it: on which object it acts (undo on a Canary
// acts on its target) and, when it cannot be used, why.
type Button struct {
	Action  Action `json:"action"`
	Label   string `json:"label"`
	Target  string `json:"target"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	Why     string `json:"why,omitempty"`
}

var labels = map[Action]string{Promote: "promote", PromoteFull: "promote --full", Pause: "pause", Resume: "resume",
	Abort: "abort", Retry: "retry", Undo: "undo"}

// buttons are the actions of a workload's page (c: the Canary, for a Canary's page).
func buttons(k workload.Kind, name string, c *v1alpha1.Canary, readOnly bool) []Button {
	out := []Button{}
	for _, a := range Actions {
		target, err := ActionTarget(a, k, name, c)
		if errors.Is(err, errNotOffered) {
			continue
		}
		b := Button{Action: a, Label: labels[a], Enabled: err == nil}
		if err != nil {
			b.Why = err.Error()
		} else {
			b.Target, b.Kind, b.Name = target.String(), target.Kind.Short, target.Name
		}
		if readOnly {
			b.Enabled, b.Why = false, "this dashboard is read-only (--read-only)"
		}
		out = append(out, b)
	}
	return out
}

var errNotOffered = errors.New("not offered")

// ActionTarget is the object an action on a workload of kind k acts on: the workload itself,
// or, for undo on a Canary, the workload its targetRef names (a Canary keeps no revisions; its
// target does, and the Canary releases the restored template through its steps).
func ActionTarget(a Action, k workload.Kind, name string, c *v1alpha1.Canary) (workload.Ref, error) {
	kinds, ok := actionKinds[a]
	if !ok {
		return workload.Ref{}, fmt.Errorf("unknown action %q", a)
	}
	if a == Undo && k.Name == workload.Canary.Name && c != nil {
		if c.Spec.TargetRef == nil {
			return workload.Ref{}, fmt.Errorf("a Canary of two Deployments keeps no revisions: abort rolls it back")
		}
		tk, ok := workload.KindFor(c.Spec.TargetRef.Kind)
		if !ok || !kindIn(tk, kinds) {
			return workload.Ref{}, fmt.Errorf("its target %s/%s has no revisions to undo to", c.Spec.TargetRef.Kind, c.Spec.TargetRef.Name)
		}
		return workload.Ref{Kind: tk, Name: c.Spec.TargetRef.Name}, nil
	}
	if !kindIn(k, kinds) {
		return workload.Ref{}, errNotOffered
	}
	return workload.Ref{Kind: k, Name: name}, nil
}

func kindIn(k workload.Kind, kinds []workload.Kind) bool {
	for _, l := range kinds {
		if l.Name == k.Name {
			return true
		}
	}
	return false
}

// Result is the outcome of an action: the verb's confirmation line, or its refusal.
type Result struct {
	Line  string `json:"line,omitempty"`
	Error string `json:"error,omitempty"`
	// Code is the HTTP status the page gets: 200, the API server's (403 for RBAC), or 409 for a
	// refusal of the verb (nothing to promote, not aborted, …).
	Code int `json:"code"`
}

// RunAction runs a verb on ref in namespace with client, under dryRun (DryRunClient for the
// confirmation's preview, which shows the patch without sending it).
func RunAction(ctx context.Context, client dynamic.Interface, namespace string, ref workload.Ref, a Action, dryRun util.DryRunStrategy) Result {
	var out bytes.Buffer
	t := mutate.Target{Ref: ref, Namespace: namespace, DryRun: dryRun, Client: client}
	var err error
	switch a {
	case Promote, PromoteFull:
		o := &promote.Options{Full: a == PromoteFull, Target: t}
		o.Out = &out
		if err = o.Validate(); err == nil {
			err = o.Run(ctx)
		}
	case Undo:
		o := &undo.Options{Target: t}
		o.Out = &out
		err = o.Run(ctx)
	case Pause, Resume:
		err = t.Do(ctx, &out, decide(func(ref workload.Ref, obj *unstructured.Unstructured) (workload.Change, error) {
			return workload.PauseChange(ref, obj, a == Pause)
		}, ref))
	case Abort:
		err = t.Do(ctx, &out, decide(workload.Abort, ref))
	case Retry:
		err = t.Do(ctx, &out, decide(workload.Retry, ref))
	default:
		err = fmt.Errorf("unknown action %q", a)
	}
	if err != nil {
		return Result{Error: err.Error(), Code: errorCode(err)}
	}
	return Result{Line: strings.TrimSpace(out.String()), Code: http.StatusOK}
}

func decide(f func(workload.Ref, *unstructured.Unstructured) (workload.Change, error), ref workload.Ref) mutate.Decide {
	return func(_ context.Context, obj *unstructured.Unstructured) (workload.Change, error) { return f(ref, obj) }
}

// errorCode is the API server's status for its errors (403 forbidden, 404, …), 409 for the
// verb's own refusals.
func errorCode(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 400 {
		return int(status.Status().Code)
	}
	return http.StatusConflict
}
