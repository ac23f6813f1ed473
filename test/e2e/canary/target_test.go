package canary

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// A Canary with targetRef releases a StatefulSet in place (docs/canary-targets.md): it holds the
// partition at replicas, so that `kubectl set image` on the StatefulSet updates no pod, then
// releases the new revision through the steps, pauses and analysis; a failing check writes the
// stable revision's template back and kube-controller-manager returns the pods to it; a retry
// releases the aborted revision again. A pod watcher fails the test the moment the StatefulSet
// has fewer than replicas − maxUnavailable (1) ready pods or more than replicas pods.

const (
	stsName     = "ledger"
	stsReplicas = 4
)

// targetEnv is a namespace with a StatefulSet of 4 ready pods and an agent running the canary
// controller.
type targetEnv struct {
	*env
	ready atomic.Bool // the invariant applies once every pod was ready
}

func setupTarget(t *testing.T, watchPods bool) *targetEnv {
	t.Helper()
	e := &targetEnv{env: &env{Env: e2eenv.Setup(t)}}
	labels := map[string]string{"app": stsName}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: stsName},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](stsReplicas),
			ServiceName: stsName,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template:    podTemplate(labels, "example.com/ledger:v1"),
		},
	}
	if _, err := e.Kube.AppsV1().StatefulSets(e.NS).Create(e.Ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitStatefulSet("4 ready pods", func(s *appsv1.StatefulSet) bool {
		return s.Status.ReadyReplicas == stsReplicas && s.Status.AvailableReplicas == stsReplicas
	})
	if watchPods { // a test in which pods change
		w := e.WatchPods("maxUnavailable", "app="+stsName, e.checkUnavailable)
		e.ready.Store(true)
		t.Cleanup(func() { w.Verify(t) })
	}
	e.startAgent()
	return e
}

// checkUnavailable fails the test the moment fewer than replicas − 1 pods are ready (the
// StatefulSet's maxUnavailable) or more than replicas pods exist (a duplicate instance).
func (e *targetEnv) checkUnavailable(pods map[types.UID]*corev1.Pod) []string {
	if !e.ready.Load() {
		return nil
	}
	ready, names := 0, map[string]int{}
	for _, p := range pods {
		names[p.Name]++
		if e2eenv.PodReady(p) && p.DeletionTimestamp == nil {
			ready++
		}
	}
	var out []string
	if ready < stsReplicas-1 {
		out = append(out, fmt.Sprintf("%d ready pods < replicas − maxUnavailable = %d", ready, stsReplicas-1))
	}
	if len(pods) > stsReplicas {
		out = append(out, fmt.Sprintf("%d pods > replicas = %d", len(pods), stsReplicas))
	}
	for n, c := range names {
		if c > 1 {
			out = append(out, fmt.Sprintf("instance %s twice", n))
		}
	}
	if out != nil {
		e.Cancel()
	}
	return out
}

func (e *targetEnv) statefulSet() *appsv1.StatefulSet {
	e.T.Helper()
	return e2eenv.Get(e.T, e.Ctx, e.Kube.AppsV1().StatefulSets(e.NS), stsName)
}

func (e *targetEnv) waitStatefulSet(what string, cond func(*appsv1.StatefulSet) bool) {
	e.T.Helper()
	e.Eventually("StatefulSet "+what, func() (bool, string) {
		s, err := e.Kube.AppsV1().StatefulSets(e.NS).Get(e.Ctx, stsName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.ObservedGeneration >= s.Generation && cond(s), fmt.Sprintf("%+v partition %d", s.Status, partitionOf(s))
	})
}

func partitionOf(s *appsv1.StatefulSet) int32 {
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

// setImage is kubectl set image statefulset/ledger: the template's image, nothing else.
func (e *targetEnv) setImage(image string) {
	e.T.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":"checkout","image":%q}]}}}}`, image)
	if _, err := e.Kube.AppsV1().StatefulSets(e.NS).Patch(e.Ctx, stsName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// images counts the StatefulSet's pods by image.
func (e *targetEnv) images() map[string]int {
	e.T.Helper()
	pods, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: "app=" + stsName})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range pods.Items {
		out[p.Spec.Containers[0].Image]++
	}
	return out
}

// podImages lists the StatefulSet's live pods with their image, by ordinal:
// "ledger-0=image ledger-1=image ...".
func (e *targetEnv) podImages() string {
	e.T.Helper()
	return e.podImagesOf("app="+stsName, stsName)
}

// podImagesOf lists the live pods of selector named <workload>-<ordinal> with their image, by
// ordinal: "<workload>-0=image <workload>-1=image ...".
func (e *env) podImagesOf(selector, workload string) string {
	e.T.Helper()
	pods, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.T.Fatal(err)
	}
	type pod struct {
		ordinal int
		image   string
	}
	var live []pod
	for _, p := range pods.Items {
		if n, err := strconv.Atoi(strings.TrimPrefix(p.Name, workload+"-")); err == nil && p.DeletionTimestamp == nil {
			live = append(live, pod{n, p.Spec.Containers[0].Image})
		}
	}
	slices.SortFunc(live, func(a, b pod) int { return a.ordinal - b.ordinal })
	out := make([]string, len(live))
	for i, p := range live {
		out[i] = workload + "-" + strconv.Itoa(p.ordinal) + "=" + p.image
	}
	return strings.Join(out, " ")
}

// ordinalImages is what podImagesOf reads for replicas pods of workload of which those below
// partition run stable and the rest update.
func ordinalImages(workload string, replicas, partition int, stable, update string) string {
	var out []string
	for i := range replicas {
		img := update
		if i < partition {
			img = stable
		}
		out = append(out, workload+"-"+strconv.Itoa(i)+"="+img)
	}
	return strings.Join(out, " ")
}

func (e *targetEnv) createTargetCanary(checks []v1alpha1.AnalysisCheck, steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	e.createTargetedCanary(name, "StatefulSet", stsName, stsReplicas, checks, steps...)
}

// waitTarget waits for the Canary to reach phase with the given Progressing reason.
func (e *targetEnv) waitTarget(phase v1alpha1.CanaryPhase, reason string) *v1alpha1.Canary {
	e.T.Helper()
	return e.waitProgressing(phase, reason)
}

// A release in 3 steps with a timed pause and a passing Job check completes; the next, whose
// check fails, is rolled back by itself; a retry releases the aborted revision again.
func TestStatefulSetTargetReleases(t *testing.T) {
	e := setupTarget(t, true)
	e.createTargetCanary([]v1alpha1.AnalysisCheck{jobCheck("example.com/smoke:job-succeed")},
		step(intstr.FromInt32(1), pauseFor(10*time.Second)), // long enough to look at step 1 under load
		step(intstr.FromString("50%"), nil, "smoke"),
		step(intstr.FromInt32(stsReplicas), nil))

	// Held before any change: partition = replicas.
	c := e.waitTarget(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	if s := e.statefulSet(); partitionOf(s) != stsReplicas || c.Status.Target == nil || c.Status.Target.Partition != stsReplicas {
		t.Fatalf("held at partition %d (status %+v), want %d", partitionOf(s), c.Status.Target, stsReplicas)
	}
	v1 := c.Status.Target.StableRevision

	// Release 1: v2 passes.
	e.setImage("example.com/ledger:v2")
	e.waitCanary("step 1 to bake with 1 pod on v2", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 1 && c.Status.Batches[0].State == v1alpha1.BatchBaking
	})
	if got := e.images(); got["example.com/ledger:v2"] != 1 {
		t.Errorf("during step 1's pause: images %v, want 1 pod on v2", got)
	}
	c = e.waitCanary("release 1 to complete", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision != v1 && c.Status.Target.StableRevision == c.Status.Target.UpdateRevision
	})
	if got := e.images(); got["example.com/ledger:v2"] != stsReplicas {
		t.Errorf("after release 1: images %v", got)
	}
	e.waitStatefulSet("held again after release 1", func(s *appsv1.StatefulSet) bool { return partitionOf(s) == stsReplicas })
	e.WaitEvent(v1alpha1.EventAnalysisPassed)
	e.WaitEvent(v1alpha1.EventReleaseComplete)
	v2 := c.Status.Target.StableRevision

	// Release 2: the check now fails at step 2; the template of v2 is written back.
	e.patchSpec(`{"analysis":[` + mustJSON(t, jobCheck("example.com/smoke:job-fail")) + `]}`)
	e.setImage("example.com/ledger:v3")
	c = e.waitCanary("release 2 to roll back by itself", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryRolledBack && c.Status.Abort != nil
	})
	if a := c.Status.Abort; a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != "smoke" || a.Step != 2 {
		t.Errorf("abort %+v, want AnalysisFailed of smoke at step 2", a)
	}
	s := e.statefulSet()
	if img := s.Spec.Template.Spec.Containers[0].Image; img != "example.com/ledger:v2" || s.Status.CurrentRevision != v2 || partitionOf(s) != stsReplicas {
		t.Errorf("after the rollback: template image %s, current revision %s (want %s), partition %d", img, s.Status.CurrentRevision, v2, partitionOf(s))
	}
	if got := e.images(); got["example.com/ledger:v2"] != stsReplicas {
		t.Errorf("after the rollback: images %v", got)
	}
	e.WaitEvent(v1alpha1.EventTemplateRestored)

	// Retry with a passing check: v3 is written back and released from step 1.
	e.patchSpec(`{"analysis":[` + mustJSON(t, jobCheck("example.com/smoke:job-succeed")) + `],"retries":1}`)
	e.waitCanary("the retry to release v3", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Abort == nil && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.Target.StableRevision != v2
	})
	if got := e.images(); got["example.com/ledger:v3"] != stsReplicas {
		t.Errorf("after the retry: images %v", got)
	}
}

// A second Canary of the same StatefulSet is refused with a condition and writes nothing; a
// Canary whose StatefulSet does not exist says so; deleting the Canary releases the hold.
func TestStatefulSetTargetRefusals(t *testing.T) {
	e := setupTarget(t, false)
	e.createTargetCanary(nil, step(intstr.FromInt32(stsReplicas), nil))
	e.waitTarget(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)

	second := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "second"},
		Spec: v1alpha1.CanarySpec{Replicas: stsReplicas, Batches: ptr.To[int32](1),
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: "StatefulSet", Name: stsName}},
	}
	missing := second.DeepCopy()
	missing.Name, missing.Spec.TargetRef.Name = "missing", "nowhere"
	for _, c := range []*v1alpha1.Canary{second, missing} {
		if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for n, reason := range map[string]string{"second": v1alpha1.ReasonTargetHeld, "missing": v1alpha1.ReasonTargetNotFound} {
		e.Eventually("Canary "+n+" Degraded "+reason, func() (bool, string) {
			c, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
			return c.Status.Phase == v1alpha1.CanaryDegraded && d != nil && d.Reason == reason, describe(c)
		})
	}
	if err := e.Apps.AppsV1alpha1().Canaries(e.NS).Delete(e.Ctx, "second", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually("Canary second gone", func() (bool, string) {
		_, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, "second", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if p := partitionOf(e.statefulSet()); p != stsReplicas {
		t.Errorf("deleting the refused Canary changed the partition to %d", p)
	}
	if err := e.Apps.AppsV1alpha1().Canaries(e.NS).Delete(e.Ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitStatefulSet("released by the deleted Canary", func(s *appsv1.StatefulSet) bool { return partitionOf(s) == 0 })
}

// The schema refuses a targetRef beside stableRef, a kind it cannot release and traffic
// routing with a StatefulSet target, naming the field and the kind.
func TestStatefulSetTargetSchema(t *testing.T) {
	e := &env{Env: e2eenv.Setup(t)}
	base := func() *v1alpha1.Canary {
		return &v1alpha1.Canary{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: v1alpha1.CanarySpec{Replicas: 2, Batches: ptr.To[int32](1),
				TargetRef: &v1alpha1.CanaryTargetRef{Kind: "StatefulSet", Name: stsName}},
		}
	}
	both := base()
	both.Spec.StableRef = v1alpha1.StableRef{Name: "web"}
	kind := base()
	kind.Spec.TargetRef.Kind = "ReplicaSet"
	routed := base()
	routed.Spec.TrafficRouting = &v1alpha1.CanaryTrafficRouting{GatewayAPI: v1alpha1.GatewayAPITrafficRouting{
		HTTPRoute: "web", StableService: "web", CanaryService: "web-canary"}}
	for want, c := range map[string]*v1alpha1.Canary{
		"set either targetRef":                                                       both,
		`spec.targetRef.kind: Unsupported value: "ReplicaSet"`:                       kind,
		"trafficRouting needs stableRef and canary, or targetRef of kind Deployment": routed,
	} {
		_, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{})
		if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create: %v; want Invalid containing %q", err, want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The agent killed in the middle of a release (SIGKILL, during step 1's pause) and started again
// finishes it from where the Canary's status says it was, every pod on the new revision.
func TestStatefulSetTargetAgentKilledMidRelease(t *testing.T) {
	e := setupTarget(t, true)
	e.createTargetCanary(nil,
		step(intstr.FromInt32(1), pauseFor(15*time.Second)), // the kill comes within it
		step(intstr.FromInt32(2), pauseFor(time.Second)))
	e.waitTarget(v1alpha1.CanaryCompleted, v1alpha1.ReasonHolding)
	e.setImage("example.com/ledger:v2")
	e.waitCanary("step 1 to bake", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.CurrentBatch == 1 && c.Status.Batches[0].State == v1alpha1.BatchBaking
	})
	e.agent.Kill()
	if p := partitionOf(e.statefulSet()); p != stsReplicas-1 {
		t.Fatalf("partition %d while the agent is down, want %d (step 1)", p, stsReplicas-1)
	}
	e.startAgent()
	e.waitCanary("the release to complete", func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		return c.Status.Phase == v1alpha1.CanaryCompleted && c.Status.Target != nil &&
			c.Status.Target.StableRevision == c.Status.Target.UpdateRevision && c.Status.CurrentBatch == 3
	})
	if got := e.images(); got["example.com/ledger:v2"] != stsReplicas {
		t.Errorf("after the release: images %v", got)
	}
	e.waitStatefulSet("held again", func(s *appsv1.StatefulSet) bool { return partitionOf(s) == stsReplicas })
}
