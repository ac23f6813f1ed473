package tapp

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

type env struct{ *e2eenv.Env }

func setup(t *testing.T) *env { return &env{e2eenv.Setup(t)} }

// startAgent runs a workload-agent with only the TApp controller, scoped to the test's namespace.
func (e *env) startAgent(extra ...string) *agentproc.Agent {
	e.T.Helper()
	return e.StartAgent("tapp", extra...)
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
	e.T.Helper()
	e2eenv.Create(e.T, e.Ctx, e.Apps.AppsV1alpha1().TApps(e.NS), tp)
}

// update applies mutate to the current TApp, retrying on conflicts.
func (e *env) update(name string, mutate func(*appsv1alpha1.TApp)) {
	e.T.Helper()
	e2eenv.Update(e.T, e.Ctx, e.Apps.AppsV1alpha1().TApps(e.NS), name, mutate)
}

func (e *env) get(name string) *appsv1alpha1.TApp {
	e.T.Helper()
	return e2eenv.Get(e.T, e.Ctx, e.Apps.AppsV1alpha1().TApps(e.NS), name)
}

// pods returns the TApp's pods by name.
func (e *env) pods(name string) map[string]*corev1.Pod {
	e.T.Helper()
	list, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: appsv1alpha1.LabelTAppName + "=" + name})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// waitSettled waits until the TApp has exactly the pods <name>-0 … <name>-(n-1), all Ready and
// on the TApp's current templates, and its status says so for the current generation.
func (e *env) waitSettled(name string, n int) map[string]*corev1.Pod {
	e.T.Helper()
	var pods map[string]*corev1.Pod
	e.Eventually(fmt.Sprintf("TApp %s settled at %d ready instances", name, n), func() (bool, string) {
		tp := e.get(name)
		pods = e.pods(name)
		ready := 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil && e2eenv.PodReady(p) {
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
	*e2eenv.PodWatcher
	maxSeen int
}

func (e *env) watchInvariants(name string, replicas, maxUnavailable int) *invariantWatcher {
	e.T.Helper()
	iw := &invariantWatcher{}
	iw.PodWatcher = e.WatchPods("invariant", appsv1alpha1.LabelTAppName+"="+name, func(pods map[types.UID]*corev1.Pod) []string {
		return iw.check(pods, replicas, maxUnavailable)
	})
	return iw
}

func (iw *invariantWatcher) check(pods map[types.UID]*corev1.Pod, replicas, maxUnavailable int) []string {
	var violations []string
	live := map[int][]string{}
	available := map[int]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		id, err := strconv.Atoi(p.Labels[appsv1alpha1.LabelInstanceID])
		if err != nil {
			violations = append(violations, fmt.Sprintf("pod %s has instance id %q", p.Name, p.Labels[appsv1alpha1.LabelInstanceID]))
			continue
		}
		live[id] = append(live[id], p.Name+"/"+string(p.UID))
		if e2eenv.PodReady(p) {
			available[id] = true
		}
	}
	for id, names := range live {
		if len(names) > 1 {
			violations = append(violations, fmt.Sprintf("instance %d has %d live pods: %v", id, len(names), names))
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
		violations = append(violations, fmt.Sprintf("%d instances unavailable (at most %d allowed)", unavailable, maxUnavailable))
	}
	return violations
}

// verify stops the watcher and fails the test with every violation it saw.
func (iw *invariantWatcher) verify(t *testing.T) {
	t.Helper()
	iw.Verify(t)
	t.Logf("invariant watcher: at most %d instances unavailable at once", iw.maxSeen)
}
