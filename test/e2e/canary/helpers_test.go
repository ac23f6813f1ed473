package canary

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

const (
	replicas   = 10
	stableName = "checkout"
	canaryName = "checkout-canary"
	name       = "checkout" // of the Canary
)

// plan is the batch plan of 10 replicas in 4 batches.
var plan = []int32{1, 4, 7, 10}

// env is one test's namespace, with a stable Deployment at full size, an agent running only the
// canary controller in that namespace, and a capacity watcher.
type env struct {
	*e2eenv.Env
	watch *capacityWatcher
	agent *agentproc.Agent
	// limit is replicas + the Canary's maxSurge: the most pods of both Deployments the surge
	// watcher allows at any moment (terminating pods count until gone).
	limit atomic.Int32
}

// setup makes the namespace and the stable Deployment, waits until its 10 pods are available,
// starts the capacity watcher and the agent. The namespace's cleanup removes the finalizers the
// stopped agent left on the Canaries, as the package documentation tells.
func setup(t *testing.T) *env {
	t.Helper()
	return setupWith(t, stableDeployment())
}

// setupWith is setup with the stable Deployment given.
func setupWith(t *testing.T, stable *appsv1.Deployment) *env {
	t.Helper()
	e := &env{Env: e2eenv.Setup(t)}
	if _, err := e.Kube.AppsV1().Deployments(e.NS).Create(e.Ctx, stable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitDeployments("the stable Deployment to have 10 available pods", func(stable, _ *appsv1.Deployment) bool {
		return stable != nil && stable.Status.AvailableReplicas == replicas && stable.Status.ObservedGeneration >= stable.Generation
	})
	e.watch = e.watchCapacity()
	e.limit.Store(replicas + 3) // the default maxSurge, 25% of 10 rounded up
	surge := e.WatchPods("surge", "app=checkout", e.checkSurge)
	t.Cleanup(func() { surge.Verify(t) })
	e.startAgent()
	return e
}

// checkSurge fails the test the moment the pods of both Deployments (terminating ones
// included: they still hold a node's resources) exceed replicas + maxSurge.
func (e *env) checkSurge(pods map[types.UID]*corev1.Pod) []string {
	n := int32(0)
	for _, p := range pods {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	if limit := e.limit.Load(); n > limit {
		e.Cancel() // fail now: every wait of the test ends at once
		return []string{fmt.Sprintf("%d pods of the stable and canary Deployments > replicas + maxSurge = %d", n, limit)}
	}
	return nil
}

// expectSurge sets the surge watcher's limit from a Canary's spec.
func (e *env) expectSurge(spec *v1alpha1.CanarySpec) {
	e.T.Helper()
	surge, err := v1alpha1.CanaryMaxSurge(spec)
	if err != nil {
		e.T.Fatal(err)
	}
	e.limit.Store(spec.Replicas + surge)
}

// startAgent starts an agent running only the canary controller in the test's namespace and
// waits until it is ready.
func (e *env) startAgent() {
	e.T.Helper()
	e.agent = e.StartAgentLoggingErrors("canary")
}

func stableDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "checkout", "track": "stable"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: stableName},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, "nginx:1.26"),
		},
	}
}

func podTemplate(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "checkout", Image: image}}},
	}
}

// createCanary releases nginx 1.27 as checkout-canary: 10 replicas in 4 batches, maxSurge 100%.
func (e *env) createCanary(pause v1alpha1.PauseType, minReadySeconds int32) {
	e.T.Helper()
	c := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.CanarySpec{
			Replicas:  replicas,
			StableRef: v1alpha1.StableRef{Name: stableName},
			Canary: v1alpha1.CanaryTarget{
				Name:     canaryName,
				Template: podTemplate(map[string]string{"app": "checkout", "track": "canary"}, "nginx:1.27"),
			},
			Batches:         ptr.To[int32](4),
			PauseType:       pause,
			MinReadySeconds: minReadySeconds,
			// Room for a whole batch at once (the surge watcher holds pods to 20), so that these
			// tests of batches, promotion and rollback see each batch in one scale; the surge
			// bound's sub-steps are TestSurgeBoundsABigStep's and the progressive tests'.
			MaxSurge: ptr.To(intstr.FromString("100%")),
		},
	}
	e.expectSurge(&c.Spec)
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

func (e *env) canary() *v1alpha1.Canary {
	e.T.Helper()
	c, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return c
}

// deployments returns the stable and the canary Deployment (nil when absent).
func (e *env) deployments() (stable, canary *appsv1.Deployment, err error) {
	get := func(n string) (*appsv1.Deployment, error) {
		d, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, n, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return d, err
	}
	if stable, err = get(stableName); err != nil {
		return nil, nil, err
	}
	canary, err = get(canaryName)
	return stable, canary, err
}

// waitCanary waits until cond holds for the Canary and both Deployments, failing the test with
// the Canary's status when it does not within e2eenv.Safety (or as soon as the capacity watcher
// cancels the test's context).
func (e *env) waitCanary(what string, cond func(c *v1alpha1.Canary, stable, canary *appsv1.Deployment) bool) *v1alpha1.Canary {
	e.T.Helper()
	var last *v1alpha1.Canary
	var lastErr error
	e2eenv.WaitFor(e.T, e.Ctx, what, func(ctx context.Context) (bool, string, error) {
		ok := false
		c, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			var stable, canary *appsv1.Deployment
			if stable, canary, err = e.deployments(); err == nil {
				last = c
				ok = cond(c, stable, canary)
			}
		}
		if err != nil {
			lastErr = err
		}
		return ok, fmt.Sprintf("last error %v\n%s", lastErr, describe(last)), nil
	})
	return last
}

func (e *env) waitDeployments(what string, cond func(stable, canary *appsv1.Deployment) bool) {
	e.T.Helper()
	e2eenv.WaitFor(e.T, e.Ctx, what, func(context.Context) (bool, string, error) {
		stable, canary, err := e.deployments()
		if err != nil {
			return false, err.Error(), nil
		}
		return cond(stable, canary), "", nil
	})
}

func describe(c *v1alpha1.Canary) string {
	if c == nil {
		return "Canary never read"
	}
	var b strings.Builder
	st := c.Status
	fmt.Fprintf(&b, "Canary: generation %d observed %d, phase %s, batch %d, approvedBatch %d, paused %v, rollback %v\n  message: %s\n  canary %d/%d available, stable %d/%d available\n",
		c.Generation, st.ObservedGeneration, st.Phase, st.CurrentBatch, c.Spec.ApprovedBatch, c.Spec.Paused, c.Spec.Rollback,
		st.Message, st.CanaryAvailable, st.CanaryReplicas, st.StableAvailable, st.StableReplicas)
	for _, bs := range st.Batches {
		fmt.Fprintf(&b, "  batch %d (%d pods): %s\n", bs.Index, bs.CanaryReplicas, bs.State)
	}
	for _, cond := range st.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s (%s): %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	return b.String()
}

// waitingBatch is the batch the Canary waits at for promotion, 0 when it is not waiting.
func waitingBatch(c *v1alpha1.Canary) int32 {
	if c.Status.ObservedGeneration != c.Generation || c.Status.Phase != v1alpha1.CanaryPaused {
		return 0
	}
	for _, b := range c.Status.Batches {
		if b.Index == c.Status.CurrentBatch && b.State == v1alpha1.BatchPaused {
			return b.Index
		}
	}
	return 0
}

// promotePatch is the promote of the plugin: a JSON patch that tests spec.approvedBatch for the
// value read and replaces it with the batch approved. Of two promotes that read the same value,
// the second fails its test and changes nothing.
func promotePatch(read, batch int32) []byte {
	return fmt.Appendf(nil, `[{"op":"test","path":"/spec/approvedBatch","value":%d},{"op":"replace","path":"/spec/approvedBatch","value":%d}]`, read, batch)
}

// promote approves the batch the Canary waits at.
func (e *env) promote(c *v1alpha1.Canary) {
	e.T.Helper()
	k := waitingBatch(c)
	if k == 0 {
		e.T.Fatalf("promote: the Canary is not waiting for promotion\n%s", describe(c))
	}
	_, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Patch(e.Ctx, name, types.JSONPatchType,
		promotePatch(c.Spec.ApprovedBatch, k), metav1.PatchOptions{})
	if err != nil {
		e.T.Fatalf("promote batch %d: %v", k, err)
	}
}

// mergePatch applies a merge patch to the Canary's spec.
func (e *env) patchSpec(spec string) {
	e.T.Helper()
	_, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Patch(e.Ctx, name, types.MergePatchType,
		[]byte(`{"spec":`+spec+`}`), metav1.PatchOptions{})
	if err != nil {
		e.T.Fatalf("patching spec with %s: %v", spec, err)
	}
}

// capacityWatcher watches the namespace's Deployments through one watch (so in the API server's
// order) and fails the test the moment available stable plus canary pods drop below replicas.
// It also records the successive spec.replicas of both Deployments.
type capacityWatcher struct {
	t    *testing.T
	stop context.CancelFunc
	done chan struct{}

	mu             sync.Mutex
	available      map[string]int32
	spec           map[string]int32
	canarySizes    []int32 // successive spec.replicas of the canary Deployment
	stableSizes    []int32 // successive spec.replicas of the stable Deployment
	lowest         int32
	events         int
	violation      string
	canaryShrankAt []string // the stable's availability when the canary's spec went down
}

func (e *env) watchCapacity() *capacityWatcher {
	e.T.Helper()
	list, err := e.Kube.AppsV1().Deployments(e.NS).List(e.Ctx, metav1.ListOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	w := &capacityWatcher{
		t: e.T, done: make(chan struct{}),
		available: map[string]int32{}, spec: map[string]int32{}, lowest: replicas,
	}
	for i := range list.Items {
		w.observe(&list.Items[i])
	}
	ctx, stop := context.WithCancel(e.Ctx)
	w.stop = stop
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return e.Kube.AppsV1().Deployments(e.NS).Watch(ctx, o)
		},
	})
	if err != nil {
		e.T.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					return
				}
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					d := ev.Object.(*appsv1.Deployment)
					if ev.Type == watch.Deleted {
						d = d.DeepCopy()
						d.Status.AvailableReplicas = 0
					}
					if msg := w.observe(d); msg != "" {
						e.T.Errorf("capacity watcher: %s", msg)
						e.Cancel() // fail now: every wait of the test ends at once
						return
					}
				case watch.Error:
					e.T.Errorf("capacity watcher: watch error %v", apierrors.FromObject(ev.Object))
					e.Cancel()
					return
				}
			}
		}
	}()
	e.T.Cleanup(w.close)
	return w
}

// observe records a Deployment's state and returns a violation, if any.
func (w *capacityWatcher) observe(d *appsv1.Deployment) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	spec := ptr.Deref(d.Spec.Replicas, 1)
	if prev, ok := w.spec[d.Name]; !ok || prev != spec {
		switch d.Name {
		case canaryName:
			w.canarySizes = append(w.canarySizes, spec)
			if ok && spec < prev {
				w.canaryShrankAt = append(w.canaryShrankAt, fmt.Sprintf("canary %d→%d with %d stable available", prev, spec, w.available[stableName]))
			}
		case stableName:
			w.stableSizes = append(w.stableSizes, spec)
		}
	}
	w.spec[d.Name] = spec
	w.available[d.Name] = d.Status.AvailableReplicas
	sum := w.available[stableName] + w.available[canaryName]
	w.lowest = min(w.lowest, sum)
	if sum < replicas && w.violation == "" {
		w.violation = fmt.Sprintf("only %d pods available (stable %d/%d, canary %d/%d) after an update of Deployment %s at resourceVersion %s",
			sum, w.available[stableName], w.spec[stableName], w.available[canaryName], w.spec[canaryName], d.Name, d.ResourceVersion)
		return w.violation
	}
	return ""
}

func (w *capacityWatcher) close() {
	w.stop()
	<-w.done
}

// check stops the watcher and reports what it saw.
func (w *capacityWatcher) check() (canarySizes, stableSizes []int32) {
	w.t.Helper()
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.violation != "" {
		w.t.Fatalf("capacity dropped below %d: %s", replicas, w.violation)
	}
	if w.events < 4 {
		w.t.Fatalf("the capacity watcher saw only %d Deployment states", w.events)
	}
	w.t.Logf("capacity watcher: %d Deployment states, lowest available %d; canary sizes %v, stable sizes %v",
		w.events, w.lowest, w.canarySizes, w.stableSizes)
	return slices.Clone(w.canarySizes), slices.Clone(w.stableSizes)
}

// nonIncreasing reports whether s never grows.
func nonIncreasing(s []int32) bool {
	for i := 1; i < len(s); i++ {
		if s[i] > s[i-1] {
			return false
		}
	}
	return true
}

// createTargetedCanary creates Canary n releasing the workload kind/target (replicas pods) in
// place, through steps under checks.
func (e *env) createTargetedCanary(n, kind, target string, replicas int32, checks []v1alpha1.AnalysisCheck, steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	c := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: n},
		Spec: v1alpha1.CanarySpec{
			Replicas:  replicas,
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: kind, Name: target},
			Steps:     steps,
			Analysis:  checks,
		},
	}
	if _, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Create(e.Ctx, c, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
}

// waitProgressing waits for the Canary to have observed its spec and reached phase with the
// Progressing reason.
func (e *env) waitProgressing(phase v1alpha1.CanaryPhase, reason string) *v1alpha1.Canary {
	e.T.Helper()
	return e.waitCanary(fmt.Sprintf("phase %s (%s)", phase, reason), func(c *v1alpha1.Canary, _, _ *appsv1.Deployment) bool {
		p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
		return c.Status.ObservedGeneration == c.Generation && c.Status.Phase == phase && p != nil && p.Reason == reason
	})
}

// waitDegraded waits for Canary n to be Degraded with reason.
func (e *env) waitDegraded(n, reason string) {
	e.T.Helper()
	e.Eventually("Canary "+n+" Degraded "+reason, func() (bool, string) {
		c, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, n, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionDegraded)
		return c.Status.Phase == v1alpha1.CanaryDegraded && d != nil && d.Reason == reason, describe(c)
	})
}
