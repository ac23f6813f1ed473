package fault

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// leaseNamespace holds the agents' Lease (agentproc's default).
const leaseNamespace = "kube-system"

// env is e2eenv's, with the Lease the test's agents elect a leader on.
type env struct {
	*e2eenv.Env
	lease string
}

func setup(t *testing.T) *env {
	t.Helper()
	e := e2eenv.Setup(t)
	return &env{Env: e, lease: "agent-" + e.NS}
}

// startAgent starts an agent in the test's namespace, electing a leader on the test's own Lease
// (unless args turn election off), and waits until it is ready (a standby is ready too). Its
// log is not checked for errors: the tests freeze and kill agents on purpose.
func (e *env) startAgent(args ...string) *agentproc.Agent {
	e.T.Helper()
	return e.RunAgent(agentproc.Options{
		Kubeconfig: e.Cluster.Kubeconfig,
		Args:       append([]string{"--namespace=" + e.NS, "--leader-elect-id=" + e.lease}, args...),
	})
}

// holder returns the identity holding the test's Lease ("" when none).
func (e *env) holder(ctx context.Context) string {
	l, err := e.Kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, e.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leader waits until one of the agents leads and returns it with its identity, read from the
// Lease and matched to the agent by its log.
func (e *env) leader(agents []*agentproc.Agent, not string) (*agentproc.Agent, string) {
	e.T.Helper()
	var leader *agentproc.Agent
	var id string
	e2eenv.WaitFor(e.T, e.Ctx, "an agent to lead", func(ctx context.Context) (bool, string, error) {
		id = e.holder(ctx)
		if id == "" || id == not {
			return false, "Lease held by " + id, nil
		}
		for _, a := range agents {
			if a.Running() && strings.Contains(a.Log(), "identity=\""+id+"\"") {
				leader = a
				return true, "", nil
			}
		}
		return false, "no running agent logged identity " + id, nil
	})
	return leader, id
}

// apply creates the objects of a YAML manifest in the test's namespace.
func (e *env) apply(manifest string) {
	e.T.Helper()
	objs, err := localcluster.DecodeManifests([]byte(manifest))
	if err != nil {
		e.T.Fatal(err)
	}
	for _, o := range objs {
		k, ok := workload.KindFor(o.GetKind())
		if !ok {
			e.T.Fatalf("no kind %s", o.GetKind())
		}
		if _, err := e.Dyn.Resource(k.Resource).Namespace(e.NS).Create(e.Ctx, o, metav1.CreateOptions{}); err != nil {
			e.T.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func (e *env) patch(k workload.Kind, name, patch string) {
	e.T.Helper()
	if _, err := e.Dyn.Resource(k.Resource).Namespace(e.NS).Patch(e.Ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.T.Fatalf("patching %s/%s with %s: %v", k.Short, name, patch, err)
	}
}

// rollout reads a workload's rollout status as `kubectl workload status` does.
func (e *env) rollout(ctx context.Context, k workload.Kind, name string) (workload.RolloutStatus, *unstructured.Unstructured, error) {
	obj, err := e.Dyn.Resource(k.Resource).Namespace(e.NS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return workload.RolloutStatus{}, nil, err
	}
	st, err := workload.RolloutStatusOf(k, obj)
	return st, obj, err
}

func (e *env) waitRollout(k workload.Kind, name string, want workload.RolloutState) {
	e.T.Helper()
	e2eenv.WaitFor(e.T, e.Ctx, fmt.Sprintf("%s/%s to be %s", k.Short, name, want), func(ctx context.Context) (bool, string, error) {
		st, _, err := e.rollout(ctx, k, name)
		if err != nil {
			return false, err.Error(), nil
		}
		return st.State == want, fmt.Sprintf("%s: %s", st.State, st.Summary), nil
	})
}

// updatedPods waits until at least n of the pods labelled sel run image (the rollout is under
// way), and fails if the rollout finished first.
func (e *env) waitUpdated(sel, image string, n int) {
	e.T.Helper()
	e2eenv.WaitFor(e.T, e.Ctx, fmt.Sprintf("%d pods on %s", n, image), func(ctx context.Context) (bool, string, error) {
		list, err := e.Kube.CoreV1().Pods(e.NS).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err.Error(), nil
		}
		c := 0
		for _, p := range list.Items {
			if p.Spec.Containers[0].Image == image {
				c++
			}
		}
		return c >= n, fmt.Sprintf("%d/%d", c, len(list.Items)), nil
	})
}

// checkWatcher stops the watcher and fails the test with what it saw.
func checkWatcher(t *testing.T, what string, w *invariant.Watcher) {
	t.Helper()
	w.Stop()
	if w.Events() == 0 {
		t.Errorf("%s watcher saw nothing", what)
	}
	for _, v := range w.Violations() {
		t.Error(v)
	}
	t.Logf("%s watcher: %d states, worst: %s", what, w.Events(), w.Worst())
}

// freeze stops the agent's process (SIGSTOP) for d, then continues it.
func freeze(t *testing.T, a *agentproc.Agent, d time.Duration) {
	t.Helper()
	if err := syscall.Kill(a.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	if err := syscall.Kill(a.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// auditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	Verb       string    `json:"verb"`
	UserAgent  string    `json:"userAgent"`
	Received   time.Time `json:"requestReceivedTimestamp"`
	Stage      string    `json:"stage"`
	RequestURI string    `json:"requestURI"`
	ObjectRef  *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

func (a auditEvent) String() string {
	code := 0
	if a.ResponseStatus != nil {
		code = a.ResponseStatus.Code
	}
	return fmt.Sprintf("%s %s %s → %d (%s)", a.Received.Format("15:04:05.000000"), a.Verb, a.RequestURI, code, a.UserAgent)
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// audit returns the requests in the audit log whose User-Agent ends with identity: writes and
// lists once answered, watches once started.
func audit(t *testing.T, identity string) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), identity) {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			continue // a line being written
		}
		started := ev.Stage == "ResponseStarted" || (ev.Stage == "ResponseComplete" && ev.Verb != "watch")
		if started && strings.HasSuffix(ev.UserAgent, "identity/"+identity) {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
