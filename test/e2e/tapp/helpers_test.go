package tapp

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// safety bounds every wait so that a broken controller fails the test instead of hanging it;
// none of them is a performance target.
const safety = 3 * time.Minute

type env struct {
	t    *testing.T
	ctx  context.Context
	kube *kubernetes.Clientset
	apps versioned.Interface
	ns   string
}

// setup creates a namespace (deleted after the test) and clients.
func setup(t *testing.T) *env {
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
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	ns, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: strings.TrimRight(name, "-") + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return &env{t: t, ctx: t.Context(), kube: kube, apps: apps, ns: ns.Name}
}

// startAgent runs a workload-agent with only the TApp controller, scoped to the test's namespace.
func (e *env) startAgent(extra ...string) *agentproc.Agent {
	e.t.Helper()
	args := append([]string{"--namespace=" + e.ns, "--controllers=tapp", "--leader-elect=false"}, extra...)
	a := agentproc.Start(e.t, agentproc.Options{Kubeconfig: localcluster.Shared(e.t).Kubeconfig, Args: args})
	ctx, cancel := context.WithTimeout(e.ctx, safety)
	defer cancel()
	if err := a.WaitReady(ctx); err != nil {
		e.t.Fatalf("agent not ready: %v\n%s", err, a.LogTail(8<<10))
	}
	e.t.Cleanup(func() { checkAgentLog(e.t, a) })
	return a
}

func newTApp(name string, replicas int32) *appsv1alpha1.TApp {
	return &appsv1alpha1.TApp{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.TAppSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{
						{Name: "main", Image: "registry.invalid/app:v1", Command: []string{"serve"}},
						{Name: "proxy", Image: "registry.invalid/proxy:v1"},
					},
				},
			},
		},
	}
}

func (e *env) create(tp *appsv1alpha1.TApp) {
	e.t.Helper()
	if _, err := e.apps.AppsV1alpha1().TApps(e.ns).Create(e.ctx, tp, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// update applies mutate to the current TApp, retrying on conflicts.
func (e *env) update(name string, mutate func(*appsv1alpha1.TApp)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tp, err := e.apps.AppsV1alpha1().TApps(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(tp)
		_, err = e.apps.AppsV1alpha1().TApps(e.ns).Update(e.ctx, tp, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(name string) *appsv1alpha1.TApp {
	e.t.Helper()
	tp, err := e.apps.AppsV1alpha1().TApps(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return tp
}

// pods returns the TApp's pods by name.
func (e *env) pods(name string) map[string]*corev1.Pod {
	e.t.Helper()
	list, err := e.kube.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: appsv1alpha1.LabelTAppName + "=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// eventually polls cond until it holds; on timeout the test fails with the last state.
func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 200*time.Millisecond, safety, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("%s: %v; last state: %s", what, err, last)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitSettled waits until the TApp has exactly the pods <name>-0 … <name>-(n-1), all Ready and
// on the TApp's current templates, and its status says so for the current generation.
func (e *env) waitSettled(name string, n int) map[string]*corev1.Pod {
	e.t.Helper()
	var pods map[string]*corev1.Pod
	e.eventually(fmt.Sprintf("TApp %s settled at %d ready instances", name, n), func() (bool, string) {
		tp := e.get(name)
		pods = e.pods(name)
		ready := 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil && podReady(p) {
				ready++
			}
		}
		st := tp.Status
		state := fmt.Sprintf("pods %d (ready %d); status gen %d/%d replicas %d ready %d updated %d available %d app %s",
			len(pods), ready, st.ObservedGeneration, tp.Generation, st.Replicas, st.ReadyReplicas, st.UpdatedReplicas, st.AvailableReplicas, st.AppStatus)
		if len(pods) != n || ready != n || st.ObservedGeneration != tp.Generation ||
			st.Replicas != int32(n) || st.ReadyReplicas != int32(n) || st.UpdatedReplicas != int32(n) || st.AvailableReplicas != int32(n) {
			return false, state
		}
		for i := 0; i < n; i++ {
			if pods[fmt.Sprintf("%s-%d", name, i)] == nil {
				return false, state + fmt.Sprintf("; no pod %s-%d", name, i)
			}
		}
		return true, state
	})
	return pods
}

func images(p *corev1.Pod) string {
	var out []string
	for _, cs := range p.Status.ContainerStatuses {
		out = append(out, cs.Name+"="+cs.Image)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// invariantWatcher watches the TApp's pods from now on and records a violation the moment more
// than maxUnavailable of the instances 0 … replicas-1 lack a Ready, non-terminating pod, or two
// live pods carry the same instance id.
type invariantWatcher struct {
	mu         sync.Mutex
	violations []string
	maxSeen    int
	events     int
	cancel     context.CancelFunc
	done       chan struct{}
}

func (e *env) watchInvariants(name string, replicas, maxUnavailable int) *invariantWatcher {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	// List first and watch from the list's version: a watch without a version would replay the
	// existing pods one ADDED event at a time, through states with most instances missing.
	sel := appsv1alpha1.LabelTAppName + "=" + name
	list, err := e.kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{} // by UID
	for i := range list.Items {
		pods[string(list.Items[i].UID)] = &list.Items[i]
	}
	w, err := e.kube.CoreV1().Pods(e.ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	iw := &invariantWatcher{cancel: cancel, done: make(chan struct{})}
	iw.check(pods, replicas, maxUnavailable)
	go func() {
		defer close(iw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Deleted:
				delete(pods, string(p.UID))
			case watch.Added, watch.Modified:
				pods[string(p.UID)] = p
			default:
				continue
			}
			iw.mu.Lock()
			iw.events++
			iw.mu.Unlock()
			iw.check(pods, replicas, maxUnavailable)
		}
	}()
	e.t.Cleanup(iw.stop)
	return iw
}

func (iw *invariantWatcher) check(pods map[string]*corev1.Pod, replicas, maxUnavailable int) {
	iw.mu.Lock()
	defer iw.mu.Unlock()
	live := map[int][]string{}
	available := map[int]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		id, err := strconv.Atoi(p.Labels[appsv1alpha1.LabelInstanceID])
		if err != nil {
			iw.violations = append(iw.violations, fmt.Sprintf("pod %s has instance id %q", p.Name, p.Labels[appsv1alpha1.LabelInstanceID]))
			continue
		}
		live[id] = append(live[id], p.Name+"/"+string(p.UID))
		if podReady(p) {
			available[id] = true
		}
	}
	for id, names := range live {
		if len(names) > 1 {
			iw.violations = append(iw.violations, fmt.Sprintf("instance %d has %d live pods: %v", id, len(names), names))
		}
	}
	unavailable := 0
	for id := 0; id < replicas; id++ {
		if !available[id] {
			unavailable++
		}
	}
	iw.maxSeen = max(iw.maxSeen, unavailable)
	if unavailable > maxUnavailable {
		iw.violations = append(iw.violations, fmt.Sprintf("%d instances unavailable (at most %d allowed)", unavailable, maxUnavailable))
	}
}

func (iw *invariantWatcher) stop() {
	iw.cancel()
	<-iw.done
}

// verify stops the watcher and fails the test with every violation it saw.
func (iw *invariantWatcher) verify(t *testing.T) {
	t.Helper()
	iw.stop()
	iw.mu.Lock()
	defer iw.mu.Unlock()
	if iw.events == 0 {
		t.Fatal("the invariant watcher saw no pod event")
	}
	for i, v := range iw.violations {
		if i == 10 {
			t.Errorf("… and %d more", len(iw.violations)-10)
			break
		}
		t.Error(v)
	}
	t.Logf("invariant watcher: %d events, at most %d instances unavailable at once", iw.events, iw.maxSeen)
}

func notFound(err error) bool { return apierrors.IsNotFound(err) }

// klogError matches klog's error lines ("E1121 06:51:23.123456 …").
var klogError = regexp.MustCompile(`(?m)^E\d{4} .*$`)

// checkAgentLog fails the test if the agent logged an error: a clean run logs none.
func checkAgentLog(t *testing.T, a *agentproc.Agent) {
	t.Helper()
	for _, line := range klogError.FindAllString(a.Log(), 20) {
		t.Errorf("agent logged an error: %s", line)
	}
}
