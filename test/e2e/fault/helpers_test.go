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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// waitTimeout bounds every wait; a safety net, not a performance target.
const waitTimeout = 5 * time.Minute

// leaseNamespace holds the agents' Lease (agentproc's default).
const leaseNamespace = "kube-system"

type env struct {
	t       *testing.T
	ctx     context.Context
	cluster *localcluster.Cluster
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	ns      string
	lease   string
}

func setup(t *testing.T) *env {
	t.Helper()
	cluster := localcluster.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	t.Cleanup(cancel)
	kube, err := kubernetes.NewForConfig(cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fault-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, cluster: cluster, kube: kube, dyn: dyn, ns: ns.Name, lease: "agent-" + ns.Name}
}

// startAgent starts an agent in the test's namespace, electing a leader on the test's own Lease
// (unless args turn election off).
func (e *env) startAgent(args ...string) *agentproc.Agent {
	e.t.Helper()
	return agentproc.Start(e.t, agentproc.Options{
		Kubeconfig: e.cluster.Kubeconfig,
		Args:       append([]string{"--namespace=" + e.ns, "--leader-elect-id=" + e.lease}, args...),
	})
}

// holder returns the identity holding the test's Lease ("" when none).
func (e *env) holder(ctx context.Context) string {
	l, err := e.kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, e.lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leader waits until one of the agents leads and returns it with its identity, read from the
// Lease and matched to the agent by its log.
func (e *env) leader(agents []*agentproc.Agent, not string) (*agentproc.Agent, string) {
	e.t.Helper()
	var leader *agentproc.Agent
	var id string
	e.waitFor("an agent to lead", func(ctx context.Context) (bool, string) {
		id = e.holder(ctx)
		if id == "" || id == not {
			return false, "Lease held by " + id
		}
		for _, a := range agents {
			if a.Running() && strings.Contains(a.Log(), "identity=\""+id+"\"") {
				leader = a
				return true, ""
			}
		}
		return false, "no running agent logged identity " + id
	})
	return leader, id
}

func (e *env) waitFor(what string, cond func(ctx context.Context) (bool, string)) {
	e.t.Helper()
	last, start := "not checked yet", time.Now()
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		ok, detail := cond(ctx)
		last = detail
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
	e.t.Logf("%5.1fs waiting for %s", time.Since(start).Seconds(), what)
}

// apply creates the objects of a YAML manifest in the test's namespace.
func (e *env) apply(manifest string) {
	e.t.Helper()
	objs, err := localcluster.DecodeManifests([]byte(manifest))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range objs {
		k, ok := workload.KindFor(o.GetKind())
		if !ok {
			e.t.Fatalf("no kind %s", o.GetKind())
		}
		if _, err := e.dyn.Resource(k.Resource).Namespace(e.ns).Create(e.ctx, o, metav1.CreateOptions{}); err != nil {
			e.t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func (e *env) patch(k workload.Kind, name, patch string) {
	e.t.Helper()
	if _, err := e.dyn.Resource(k.Resource).Namespace(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("patching %s/%s with %s: %v", k.Short, name, patch, err)
	}
}

// rollout reads a workload's rollout status as `kubectl workload status` does.
func (e *env) rollout(ctx context.Context, k workload.Kind, name string) (workload.RolloutStatus, *unstructured.Unstructured, error) {
	obj, err := e.dyn.Resource(k.Resource).Namespace(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return workload.RolloutStatus{}, nil, err
	}
	st, err := workload.RolloutStatusOf(k, obj)
	return st, obj, err
}

func (e *env) waitRollout(k workload.Kind, name string, want workload.RolloutState) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%s/%s to be %s", k.Short, name, want), func(ctx context.Context) (bool, string) {
		st, _, err := e.rollout(ctx, k, name)
		if err != nil {
			return false, err.Error()
		}
		return st.State == want, fmt.Sprintf("%s: %s", st.State, st.Summary)
	})
}

// updatedPods waits until at least n of the pods labelled sel run image (the rollout is under
// way), and fails if the rollout finished first.
func (e *env) waitUpdated(sel, image string, n int) {
	e.t.Helper()
	e.waitFor(fmt.Sprintf("%d pods on %s", n, image), func(ctx context.Context) (bool, string) {
		list, err := e.kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err.Error()
		}
		c := 0
		for _, p := range list.Items {
			if p.Spec.Containers[0].Image == image {
				c++
			}
		}
		return c >= n, fmt.Sprintf("%d/%d", c, len(list.Items))
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
