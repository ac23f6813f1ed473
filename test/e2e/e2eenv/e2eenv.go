// Package e2eenv is what every end-to-end test package shares: one test's environment on the
// shared local control plane (clients and a namespace of its own, deleted after the test), the
// workload-agent as a process scoped to that namespace, waits bounded by Safety, Event waits,
// and a pod watcher that checks an invariant on every pod change.
//
//	e := e2eenv.Setup(t)
//	e.StartAgent("tapp")
//	e.Eventually("3 pods", func() (bool, string) { … })
//
// A package embeds *Env in its own env type for what only it needs.
package e2eenv

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// Safety bounds every wait so that a broken controller fails the test instead of hanging it;
// it is no performance target.
const Safety = 3 * time.Minute

// Env is one test's environment.
type Env struct {
	T       *testing.T
	Ctx     context.Context
	Cluster *localcluster.Cluster
	Kube    kubernetes.Interface
	Apps    versioned.Interface
	Dyn     dynamic.Interface
	// NS is the test's namespace ("" for an Env of Clients).
	NS string
	// Cancel ends Ctx, and so every wait of the test at once: a watcher that saw a violation
	// calls it to fail the test now rather than at the next timeout.
	Cancel context.CancelFunc
	// WaitNamespaceGone makes the cleanup wait until the namespace is gone, when it held
	// Canaries, and fail the test if it stays.
	WaitNamespaceGone bool
}

// Clients returns an Env with clients of the shared cluster and no namespace.
func Clients(t *testing.T) *Env {
	t.Helper()
	c := localcluster.Shared(t)
	kube, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	apps, err := versioned.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return &Env{T: t, Ctx: ctx, Cluster: c, Kube: kube, Apps: apps, Dyn: dyn, Cancel: cancel}
}

var notInLabel = regexp.MustCompile(`[^a-z0-9-]`)

// Setup returns an Env with a namespace named after the test, deleted when the test ends.
func Setup(t *testing.T) *Env {
	t.Helper()
	e := Clients(t)
	// A namespace name is a DNS label: the test's name, lower case, other characters as '-'.
	name := notInLabel.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	ns, err := e.Kube.CoreV1().Namespaces().Create(e.Ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.NS = ns.Name
	t.Cleanup(e.deleteNamespace)
	return e
}

// deleteNamespace runs after the agents' cleanups (registered later, run first): it removes the
// finalizer the stopped agent left on every Canary (the escape hatch pkg/controller/canary
// documents), or the Canaries, and so the namespace, would stay Terminating for ever.
func (e *Env) deleteNamespace() {
	ctx := context.Background() // the test's context is cancelled by now
	list, err := e.Apps.AppsV1alpha1().Canaries(e.NS).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, c := range list.Items {
			if len(c.Finalizers) > 0 {
				_, _ = e.Apps.AppsV1alpha1().Canaries(e.NS).Patch(ctx, c.Name, types.JSONPatchType,
					[]byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
			}
		}
	}
	if err := e.Kube.CoreV1().Namespaces().Delete(ctx, e.NS, metav1.DeleteOptions{}); err != nil {
		if e.WaitNamespaceGone {
			e.T.Errorf("deleting namespace %s: %v", e.NS, err)
		}
		return
	}
	if !e.WaitNamespaceGone || err != nil || len(list.Items) == 0 {
		return
	}
	// A namespace that held Canaries must go, finalizers and all (about 5 s: the namespace
	// controller's pace).
	start := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, Safety, true, func(ctx context.Context) (bool, error) {
		_, err := e.Kube.CoreV1().Namespaces().Get(ctx, e.NS, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		got, _ := e.Kube.CoreV1().Namespaces().Get(ctx, e.NS, metav1.GetOptions{})
		e.T.Errorf("namespace %s still exists %v after its deletion: %+v", e.NS, Safety, got.Status)
		return
	}
	e.T.Logf("namespace %s deleted in %v", e.NS, time.Since(start).Round(time.Millisecond))
}

// StartAgent runs a workload-agent with the given controllers (comma-separated), scoped to the
// test's namespace, and waits until it is ready. When the test ends, it fails if the agent
// logged an error: a clean run logs none (conflicts with a cache that lags are retried quietly).
func (e *Env) StartAgent(controllers string, extra ...string) *agentproc.Agent {
	e.T.Helper()
	a := e.RunAgent(e.agentOptions(controllers, extra))
	e.T.Cleanup(func() { CheckAgentLog(e.T, a) })
	return a
}

// StartAgentLoggingErrors is StartAgent for tests that only log what the agent logged as an
// error instead of failing on it.
func (e *Env) StartAgentLoggingErrors(controllers string, extra ...string) *agentproc.Agent {
	e.T.Helper()
	a := e.RunAgent(e.agentOptions(controllers, extra))
	e.T.Cleanup(func() {
		for _, line := range AgentErrors(a) {
			e.T.Logf("agent logged an error: %s", line)
		}
	})
	return a
}

func (e *Env) agentOptions(controllers string, extra []string) agentproc.Options {
	args := append([]string{"--namespace=" + e.NS, "--controllers=" + controllers, "--leader-elect=false"}, extra...)
	return agentproc.Options{Kubeconfig: e.Cluster.Kubeconfig, Args: args}
}

// RunAgent starts a workload-agent as opts say and waits until it is ready.
func (e *Env) RunAgent(opts agentproc.Options) *agentproc.Agent {
	e.T.Helper()
	a := agentproc.Start(e.T, opts)
	ctx, cancel := context.WithTimeout(e.Ctx, Safety)
	defer cancel()
	if err := a.WaitReady(ctx); err != nil {
		e.T.Fatalf("agent not ready: %v\n%s", err, a.LogTail(8<<10))
	}
	return a
}

// klogError matches klog's error lines ("E1121 06:51:23.123456 …").
var klogError = regexp.MustCompile(`(?m)^E\d{4} .*$`)

// AgentErrors returns the error lines of the agent's log (at most 20).
func AgentErrors(a *agentproc.Agent) []string { return klogError.FindAllString(a.Log(), 20) }

// CheckAgentLog fails the test if the agent logged an error.
func CheckAgentLog(t testing.TB, a *agentproc.Agent) {
	t.Helper()
	for _, line := range AgentErrors(a) {
		t.Errorf("agent logged an error: %s", line)
	}
}

// WaitFor polls cond every 200 ms until it holds, for at most Safety; the test fails with the
// last state cond described, at once if cond returns an error.
func WaitFor(t testing.TB, ctx context.Context, what string, cond func(ctx context.Context) (done bool, state string, err error)) {
	t.Helper()
	last := "not checked yet"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, Safety, true, func(ctx context.Context) (bool, error) {
		ok, state, err := cond(ctx)
		last = state
		return ok, err
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last state: %s", what, err, last)
	}
}

// Eventually polls cond until it holds (see WaitFor).
func (e *Env) Eventually(what string, cond func() (done bool, state string)) {
	e.T.Helper()
	WaitFor(e.T, e.Ctx, what, func(context.Context) (bool, string, error) {
		ok, state := cond()
		return ok, state, nil
	})
}

// WaitEvent waits for an Event in namespace ns with the given reason, about the named object
// ("" for any).
func WaitEvent(t testing.TB, ctx context.Context, kube kubernetes.Interface, ns, object, reason string) {
	t.Helper()
	sel := "reason=" + reason
	what := fmt.Sprintf("a %s Event", reason)
	if object != "" {
		sel = "involvedObject.name=" + object + "," + sel
		what += " about " + object
	}
	WaitFor(t, ctx, what, func(ctx context.Context) (bool, string, error) {
		list, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(list.Items) > 0, fmt.Sprintf("%d events", len(list.Items)), nil
	})
}

// WaitEvent waits for an Event with the given reason in the test's namespace.
func (e *Env) WaitEvent(reason string) {
	e.T.Helper()
	WaitEvent(e.T, e.Ctx, e.Kube, e.NS, "", reason)
}

// PodReady reports whether the pod's Ready condition is true.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
