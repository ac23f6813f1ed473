package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// The pod template every workload of the benchmarks runs: one container, as small as a pod gets,
// so that what is measured is the controllers, not object sizes.
func podTemplate(app, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "main", Image: image}},
		},
	}
}

func newDeployment(name string, n int, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image),
		},
	}
}

func newTApp(name string, n int, image string) *appsv1alpha1.TApp {
	return &appsv1alpha1.TApp{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.TAppSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image),
		},
	}
}

// zones are the localcluster nodes' zones.
var zones = []string{"zone-a", "zone-b", "zone-c"}

func newUnitedDeployment(name string, perSubset int, image string) *appsv1alpha1.UnitedDeployment {
	ud := &appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To(int32(perSubset * len(zones))),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: appsv1alpha1.SubsetTemplate{TAppTemplate: &appsv1alpha1.TAppTemplateSpec{Spec: appsv1alpha1.TAppSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: podTemplate(name, image),
			}}},
		},
	}
	for _, z := range zones {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, appsv1alpha1.Subset{
			Name: z,
			NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z},
			}}},
		})
	}
	return ud
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podLive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// podRunsOn reports whether a pod still holds its place on its node: not finished, terminating
// ones included (they count against a surge bound until they are gone).
func podRunsOn(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// runsImage reports whether every container of the pod has image in its spec and in its status.
func runsImage(p *corev1.Pod, image string) bool {
	for _, c := range p.Spec.Containers {
		if c.Image != image {
			return false
		}
	}
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Image != image {
			return false
		}
	}
	return true
}

func hasEnv(p *corev1.Pod, name, value string) bool {
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name && e.Value == value {
				return true
			}
		}
	}
	return false
}

// podTracker follows the pods of a label selector with a watch and records when exactly want
// live pods exist and all of them are done (a predicate such as Ready on the new image).
type podTracker struct {
	want   int
	isDone func(*corev1.Pod) bool

	mu         sync.Mutex
	start      time.Time
	live, good map[types.UID]bool
	firstGood  time.Duration // first pod done
	halfGood   time.Duration // half of want done
	allGood    time.Duration // want pods live and done, no other
	done       chan struct{}
	stop       chan struct{}
	factory    informers.SharedInformerFactory
}

func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// trackPods starts a tracker and waits until it has listed the current pods.
func (e *env) trackPods(b *testing.B, ns, selector string, want int, isDone func(*corev1.Pod) bool) *podTracker {
	b.Helper()
	t := &podTracker{
		want: want, isDone: isDone,
		live: map[types.UID]bool{}, good: map[types.UID]bool{},
		done: make(chan struct{}), stop: make(chan struct{}),
	}
	t.factory = informers.NewSharedInformerFactoryWithOptions(e.kube, 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }),
		informers.WithTransform(stripManagedFields))
	inf := t.factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj, false) },
		UpdateFunc: func(_, obj any) { t.observe(obj, false) },
		DeleteFunc: func(obj any) { t.observe(obj, true) },
	}); err != nil {
		b.Fatal(err)
	}
	t.factory.Start(t.stop)
	for typ, ok := range t.factory.WaitForCacheSync(t.stop) {
		if !ok {
			b.Fatalf("pod tracker: %v did not sync", typ)
		}
	}
	b.Cleanup(t.close)
	return t
}

// begin starts the clock.
func (t *podTracker) begin() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start = time.Now()
}

func (t *podTracker) observe(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if deleted || !podLive(p) {
		delete(t.live, p.UID)
		delete(t.good, p.UID)
	} else {
		t.live[p.UID] = true
		if t.isDone(p) {
			t.good[p.UID] = true
		} else {
			delete(t.good, p.UID)
		}
	}
	if t.start.IsZero() {
		return
	}
	since := time.Since(t.start)
	if len(t.good) >= 1 && t.firstGood == 0 {
		t.firstGood = since
	}
	if len(t.good) >= (t.want+1)/2 && t.halfGood == 0 {
		t.halfGood = since
	}
	if len(t.good) == t.want && len(t.live) == t.want && t.allGood == 0 {
		t.allGood = since
		close(t.done)
	}
}

func (t *podTracker) state() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%d live pods, %d of %d done", len(t.live), len(t.good), t.want)
}

// wait waits until the tracker is done, printing progress every 15 s.
func (t *podTracker) wait(b *testing.B, what string) {
	b.Helper()
	timeout := time.After(phaseTimeout)
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
			logf("bench: %s: %s", what, t.state())
		case <-timeout:
			b.Fatalf("%s: not done after %v (a safety bound, not a target): %s", what, phaseTimeout, t.state())
		}
	}
}

func (t *podTracker) close() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
		t.factory.Shutdown()
	}
}

// poll calls cond every interval until it returns true; it fails the benchmark after
// phaseTimeout with cond's last description.
func poll(b *testing.B, what string, interval time.Duration, cond func(context.Context) (bool, string, error)) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	last := "not checked"
	lastLog := time.Now()
	for {
		ok, state, err := cond(ctx)
		if err != nil && !apierrors.IsNotFound(err) {
			state = err.Error()
		}
		if ok {
			return
		}
		last = state
		if time.Since(lastLog) > 15*time.Second {
			logf("bench: waiting for %s: %s", what, last)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%s: not after %v (a safety bound, not a target); last: %s", what, phaseTimeout, last)
		case <-time.After(interval):
		}
	}
}

// ensureNamespace creates ns if it does not exist.
func (e *env) ensureNamespace(b *testing.B, ns string) {
	b.Helper()
	_, err := e.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	poll(b, "service account default in "+ns, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		_, err := e.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "no default service account yet", err
	})
}

// deleteNamespace deletes ns and waits until it is gone with all its pods.
func (e *env) deleteNamespace(b *testing.B, ns string) {
	b.Helper()
	start := time.Now()
	err := e.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		b.Fatal(err)
	}
	poll(b, "namespace "+ns+" gone", time.Second, func(ctx context.Context) (bool, string, error) {
		_, err := e.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
	logf("bench: namespace %s deleted in %s", ns, Secs(time.Since(start)))
}

// deploymentComplete reports whether a Deployment's status shows n updated, ready and available
// replicas and nothing else, for its current generation.
func (e *env) deploymentComplete(ns, name string, n int) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		d, err := e.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s, w := d.Status, int32(n)
		state := fmt.Sprintf("generation %d observed %d; replicas %d updated %d ready %d available %d",
			d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas)
		return s.ObservedGeneration >= d.Generation && s.Replicas == w && s.UpdatedReplicas == w && s.ReadyReplicas == w && s.AvailableReplicas == w, state, nil
	}
}

// tappComplete is deploymentComplete for a TApp.
func (e *env) tappComplete(ns, name string, n int) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		t, err := e.apps.AppsV1alpha1().TApps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s, w := t.Status, int32(n)
		state := fmt.Sprintf("generation %d observed %d; replicas %d updated %d ready %d available %d; %s",
			t.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, s.AppStatus)
		return s.ObservedGeneration == t.Generation && s.Replicas == w && s.UpdatedReplicas == w && s.ReadyReplicas == w && s.AvailableReplicas == w, state, nil
	}
}

// unitedDeploymentComplete is deploymentComplete for a UnitedDeployment.
func (e *env) unitedDeploymentComplete(ns, name string, n int) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		u, err := e.apps.AppsV1alpha1().UnitedDeployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s, w := u.Status, int32(n)
		state := fmt.Sprintf("generation %d observed %d; replicas %d ready %d updated %d updated-ready %d",
			u.Generation, s.ObservedGeneration, s.Replicas, s.ReadyReplicas, s.UpdatedReplicas, s.UpdatedReadyReplicas)
		return s.ObservedGeneration == u.Generation && s.Replicas == w && s.ReadyReplicas == w && s.UpdatedReplicas == w && s.UpdatedReadyReplicas == w, state, nil
	}
}
