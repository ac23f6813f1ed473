package tapp

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubectl-workload/kubectl-workload/pkg/kubeinformers"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
)

var epoch = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const ns = "default"

// fixture follows k8s.io/sample-controller's tests: objects are put straight into the informer
// indexers (the informers are never started) and into the fake clientsets, and the test asserts
// the API actions a sync makes.
type fixture struct {
	t *testing.T

	kubeClient *k8sfake.Clientset
	client     *fake.Clientset
	clock      *testclock.FakeClock
	recorder   *record.FakeRecorder

	tappIndexer, podIndexer, pvcIndexer, revisionIndexer cache.Indexer
	c                                                    *Controller

	// log is every action of both clients in the order they were made.
	mu  sync.Mutex
	log []core.Action
	// fail makes calls of "verb resource" fail with the error.
	fail map[string]error
}

// newFixture is newFixtureWithHistory with every TApp's templates already recorded: a revision
// of its current templates exists and its status names it, as after the TApp's first sync.
func newFixture(t *testing.T, tapps []*appsv1alpha1.TApp, pods []*corev1.Pod, pvcs []*corev1.PersistentVolumeClaim, kubeObjects ...runtime.Object) *fixture {
	t.Helper()
	recorded := make([]*appsv1alpha1.TApp, len(tapps))
	for i, tp := range tapps {
		tp = tp.DeepCopy()
		rev := recordedRevision(t, tp, 1)
		if tp.Status.UpdateRevision == "" {
			tp.Status.CurrentRevision, tp.Status.UpdateRevision = rev.Name, rev.Name
		}
		recorded[i] = tp
		kubeObjects = append(kubeObjects, rev)
	}
	return newFixtureWithHistory(t, recorded, pods, pvcs, kubeObjects...)
}

// recordedRevision is the ControllerRevision numbered n of tp's current templates.
func recordedRevision(t *testing.T, tp *appsv1alpha1.TApp, n int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := revisiondata.EncodeTApp(&tp.Spec)
	must(t, err)
	rev := revision.New(tp, controllerKind, revisionLabels(tp), data, n, tp.Status.CollisionCount)
	rev.UID = types.UID("uid-" + rev.Name)
	return rev
}

// newFixtureWithHistory builds a fixture from the objects given; ControllerRevisions among
// kubeObjects go into the revision informer.
func newFixtureWithHistory(t *testing.T, tapps []*appsv1alpha1.TApp, pods []*corev1.Pod, pvcs []*corev1.PersistentVolumeClaim, kubeObjects ...runtime.Object) *fixture {
	f := &fixture{t: t, clock: testclock.NewFakeClock(epoch), recorder: record.NewFakeRecorder(1000)}
	var objs []runtime.Object
	for _, tp := range tapps {
		objs = append(objs, tp.DeepCopy())
	}
	for _, p := range pods {
		kubeObjects = append(kubeObjects, p.DeepCopy())
	}
	for _, p := range pvcs {
		kubeObjects = append(kubeObjects, p.DeepCopy())
	}
	f.client = fake.NewSimpleClientset(objs...)
	f.kubeClient = k8sfake.NewClientset(kubeObjects...)
	logAction := func(a core.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.log = append(f.log, a)
		// The API server gives every new object a UID.
		if c, ok := a.(core.CreateAction); ok {
			if o, ok := c.GetObject().(metav1.Object); ok && o.GetUID() == "" {
				o.SetUID(types.UID("uid-" + o.GetName()))
			}
		}
		if err, ok := f.fail[a.GetVerb()+" "+a.GetResource().Resource]; ok {
			return true, nil, err
		}
		return false, nil, nil
	}
	f.client.PrependReactor("*", "*", logAction)
	f.kubeClient.PrependReactor("*", "*", logAction)

	inf := externalversions.NewSharedInformerFactory(f.client, 0)
	kinf := kubeinformers.New(f.kubeClient, 0)
	tappInformer := inf.Apps().V1alpha1().TApps()
	podInformer := kinf.Pods()
	pvcInformer := kinf.PersistentVolumeClaims()
	revisionInformer := kinf.ControllerRevisions()
	c, err := NewController(&ctrl.Context{KubeClient: f.kubeClient, Client: f.client, Informers: inf, ManagedInformers: kinf,
		EventRecorder: func(string) record.EventRecorder { return f.recorder }, Clock: f.clock})
	must(t, err)
	f.c = c
	f.tappIndexer = tappInformer.Informer().GetIndexer()
	f.revisionIndexer = revisionInformer.Informer().GetIndexer()
	for _, o := range kubeObjects {
		if r, ok := o.(*appsv1.ControllerRevision); ok {
			must(t, f.revisionIndexer.Add(r))
		}
	}
	f.podIndexer = podInformer.Informer().GetIndexer()
	f.pvcIndexer = pvcInformer.Informer().GetIndexer()
	for _, tp := range tapps {
		must(t, f.tappIndexer.Add(tp))
	}
	for _, p := range pods {
		must(t, f.podIndexer.Add(p))
	}
	for _, p := range pvcs {
		must(t, f.pvcIndexer.Add(p))
	}
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sync runs one sync of the TApp and returns the API actions it made, described.
func (f *fixture) sync(name string) []string {
	f.t.Helper()
	f.clearActions()
	if err := f.c.syncHandler(context.Background(), cache.NewObjectName(ns, name)); err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	return f.actions()
}

func (f *fixture) clearActions() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = nil
}

func (f *fixture) allActions() []core.Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]core.Action(nil), f.log...)
}

// actions describes the API writes (and reads) made since the last ClearActions, ignoring the
// list and watch calls of informers: "verb resource[/subresource] name".
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.allActions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, describe(a))
	}
	return out
}

func describe(a core.Action) string {
	res := a.GetResource().Resource
	if s := a.GetSubresource(); s != "" {
		res += "/" + s
	}
	name := ""
	switch a := a.(type) {
	case core.CreateAction:
		name = a.GetObject().(metav1.Object).GetName()
	case core.UpdateAction:
		name = a.GetObject().(metav1.Object).GetName()
	case core.PatchAction:
		name = a.GetName()
	case core.DeleteAction:
		name = a.GetName()
	case core.GetAction:
		name = a.GetName()
	}
	return fmt.Sprintf("%s %s %s", a.GetVerb(), res, name)
}

// sameActions compares action lists as multisets: calls of one slow-start batch run concurrently,
// so their order is not defined.
func sameActions(t *testing.T, got []string, want ...string) {
	t.Helper()
	g := append([]string(nil), got...)
	w := append([]string(nil), want...)
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Fatalf("actions:\n  got  %q\n  want %q", got, want)
	}
}

// findAction returns the actions of f's clients matching verb and resource (with subresource).
func (f *fixture) findActions(verb, resource string) []core.Action {
	var out []core.Action
	for _, a := range f.allActions() {
		res := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			res += "/" + s
		}
		if a.GetVerb() == verb && res == resource {
			out = append(out, a)
		}
	}
	return out
}

// statusWritten returns the status the last sync wrote, failing if it wrote none.
func (f *fixture) statusWritten() *appsv1alpha1.TApp {
	f.t.Helper()
	acts := f.findActions("update", "tapps/status")
	if len(acts) != 1 {
		f.t.Fatalf("%d status updates, want 1", len(acts))
	}
	return acts[0].(core.UpdateAction).GetObject().(*appsv1alpha1.TApp)
}

// feedStatus puts the status the last sync wrote into the TApp cache, and the revisions it
// created into the revision cache, as the informers would.
func (f *fixture) feedStatus() *appsv1alpha1.TApp {
	f.t.Helper()
	tp := f.statusWritten().DeepCopy()
	must(f.t, f.tappIndexer.Update(tp))
	for _, a := range f.findActions("create", "controllerrevisions") {
		must(f.t, f.revisionIndexer.Add(a.(core.CreateAction).GetObject()))
	}
	return tp
}

// revisionCreated is the action creating the revision of tp's current templates.
func revisionCreated(t *testing.T, tp *appsv1alpha1.TApp) string {
	t.Helper()
	return "create controllerrevisions " + recordedRevision(t, tp, 0).Name
}

func (f *fixture) setTApp(tp *appsv1alpha1.TApp) {
	f.t.Helper()
	must(f.t, f.tappIndexer.Update(tp))
	must(f.t, f.client.Tracker().Update(appsv1alpha1.SchemeGroupVersion.WithResource("tapps"), tp, tp.Namespace))
}

func (f *fixture) getTApp(name string) *appsv1alpha1.TApp {
	f.t.Helper()
	obj, ok, err := f.tappIndexer.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		f.t.Fatalf("TApp %s not in cache", name)
	}
	return obj.(*appsv1alpha1.TApp).DeepCopy()
}

// setPod puts a pod into the cache (and the fake API) and lets the controller observe it.
func (f *fixture) setPod(p *corev1.Pod) {
	f.t.Helper()
	old, exists, _ := f.podIndexer.Get(p)
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	if exists {
		must(f.t, f.podIndexer.Update(p))
		_ = f.kubeClient.Tracker().Update(gvr, p, p.Namespace)
		f.c.podEvents.OnUpdate(old, p)
	} else {
		must(f.t, f.podIndexer.Add(p))
		_ = f.kubeClient.Tracker().Add(p)
		f.c.podEvents.OnAdd(p, false)
	}
}

// removePod deletes a pod from the cache and lets the controller observe it.
func (f *fixture) removePod(name string) {
	f.t.Helper()
	obj, exists, _ := f.podIndexer.GetByKey(ns + "/" + name)
	if !exists {
		f.t.Fatalf("pod %s not in cache", name)
	}
	must(f.t, f.podIndexer.Delete(obj))
	_ = f.kubeClient.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, name)
	f.c.podEvents.OnDelete(obj)
}

func (f *fixture) cachedPod(name string) *corev1.Pod {
	f.t.Helper()
	obj, exists, _ := f.podIndexer.GetByKey(ns + "/" + name)
	if !exists {
		f.t.Fatalf("pod %s not in cache", name)
	}
	return obj.(*corev1.Pod).DeepCopy()
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func newTApp(name string, replicas int32) *appsv1alpha1.TApp {
	return &appsv1alpha1.TApp{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1alpha1.SchemeGroupVersion.String(), Kind: "TApp"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID("uid-" + name), Generation: 1, ResourceVersion: "1",
		},
		Spec: appsv1alpha1.TAppSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "main", Image: "example.com/app:v1", Command: []string{"serve"}},
					{Name: "sidecar", Image: "example.com/proxy:v1"},
				}},
			},
		},
	}
}

// runningPod is the pod the controller would create for instance id, as the kubelet would report
// it once running: scheduled, Running, Ready, every container on the image of its spec and the
// in-place gate True.
func runningPod(t *appsv1alpha1.TApp, id int) *corev1.Pod {
	info, err := newTemplateSet(t).forInstance(id)
	if err != nil {
		panic(err)
	}
	p := newPod(t, id, info)
	p.UID = types.UID(fmt.Sprintf("pod-uid-%s-%d", t.Name, id))
	p.ResourceVersion = "10"
	p.CreationTimestamp = metav1.NewTime(epoch.Add(-time.Hour))
	p.Spec.NodeName = "node-1"
	p.Status.Phase = corev1.PodRunning
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true})
	}
	lt := metav1.NewTime(epoch.Add(-30 * time.Minute))
	p.Status.Conditions = []corev1.PodCondition{
		{Type: appsv1alpha1.ConditionInPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: lt},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: lt},
	}
	return p
}

func runningPods(t *appsv1alpha1.TApp, ids ...int) []*corev1.Pod {
	var out []*corev1.Pod
	for _, id := range ids {
		out = append(out, runningPod(t, id))
	}
	return out
}

func setReady(p *corev1.Pod, ready bool) {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = st
			p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(epoch)
		}
	}
}

func bumpRV(p *corev1.Pod) {
	var n int
	fmt.Sscanf(p.ResourceVersion, "%d", &n)
	p.ResourceVersion = fmt.Sprint(n + 1)
}
