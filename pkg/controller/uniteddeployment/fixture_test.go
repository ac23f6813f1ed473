package uniteddeployment

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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
)

const ns = "default"

var epoch = metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))

var (
	gvrUD   = appsv1alpha1.SchemeGroupVersion.WithResource("uniteddeployments")
	gvrTApp = appsv1alpha1.SchemeGroupVersion.WithResource("tapps")
	gvrSts  = appsv1.SchemeGroupVersion.WithResource("statefulsets")
	gvrDep  = appsv1.SchemeGroupVersion.WithResource("deployments")
	gvrRev  = appsv1.SchemeGroupVersion.WithResource("controllerrevisions")
)

// fixture follows k8s.io/sample-controller's tests: the informers are never started; objects
// are put straight into their indexers and into the fake clientsets, a test runs syncHandler
// and asserts the exact API writes it made (list and watch calls are ignored).
type fixture struct {
	t *testing.T

	kubeClient *k8sfake.Clientset
	client     *fake.Clientset
	recorder   *record.FakeRecorder
	c          *Controller
	handler    cache.ResourceEventHandler

	indexers map[schema.GroupVersionResource]cache.Indexer
	pods     cache.Indexer

	mu  sync.Mutex
	log []core.Action
	// refused[i] is true when log[i] failed (fail).
	refused []bool
	names   int
	// version is the last resourceVersion given out: every create, update and put gets the next,
	// as the API server would.
	version int
	// fail makes calls of "verb resource" fail with the error.
	fail map[string]error
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	f := &fixture{t: t, recorder: record.NewFakeRecorder(1000), fail: map[string]error{}}
	var ours, kube []runtime.Object
	for _, o := range objects {
		switch o.(type) {
		case *appsv1alpha1.UnitedDeployment, *appsv1alpha1.TApp:
			ours = append(ours, o.DeepCopyObject())
		default:
			kube = append(kube, o.DeepCopyObject())
		}
	}
	f.client = fake.NewSimpleClientset(ours...)
	f.kubeClient = k8sfake.NewClientset(kube...)
	for _, c := range []*core.Fake{&f.client.Fake, &f.kubeClient.Fake} {
		// The fake clientsets implement neither resourceVersions nor generateName. Reactors
		// prepended later run first: generateName, then record (which logs the call as sent),
		// then stampVersion.
		c.PrependReactor("update", "*", f.stampVersion)
		c.PrependReactor("create", "*", f.stampVersion)
		c.PrependReactor("*", "*", f.record)
		c.PrependReactor("create", "*", f.generateName)
	}

	inf := externalversions.NewSharedInformerFactory(f.client, 0)
	kinf := kubeinformers.New(f.kubeClient, 0)
	udInf := inf.Apps().V1alpha1().UnitedDeployments()
	tappInf := inf.Apps().V1alpha1().TApps()
	stsInf := kinf.StatefulSets()
	depInf := kinf.Deployments()
	revInf := kinf.ControllerRevisions()
	podInf := kinf.Pods()
	c, err := NewController(&ctrl.Context{KubeClient: f.kubeClient, Client: f.client, Informers: inf, ManagedInformers: kinf,
		EventRecorder: func(string) record.EventRecorder { return f.recorder }, Clock: clock.RealClock{}})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.handler = c.workloadEvents
	f.indexers = map[schema.GroupVersionResource]cache.Indexer{
		gvrUD:   udInf.Informer().GetIndexer(),
		gvrTApp: tappInf.Informer().GetIndexer(),
		gvrSts:  stsInf.Informer().GetIndexer(),
		gvrDep:  depInf.Informer().GetIndexer(),
		gvrRev:  revInf.Informer().GetIndexer(),
	}
	f.pods = podInf.Informer().GetIndexer()
	for _, o := range objects {
		f.cache(o)
	}
	return f
}

func (f *fixture) record(a core.Action) (bool, runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, a.DeepCopy())
	err, ok := f.fail[a.GetVerb()+" "+a.GetResource().Resource]
	f.refused = append(f.refused, ok)
	if ok {
		return true, nil, err
	}
	return false, nil, nil
}

// stampVersion gives a created or updated object the next resourceVersion.
func (f *fixture) stampVersion(a core.Action) (bool, runtime.Object, error) {
	if obj, ok := a.(interface{ GetObject() runtime.Object }).GetObject().(metav1.Object); ok {
		obj.SetResourceVersion(f.nextVersion())
	}
	return false, nil, nil
}

func (f *fixture) nextVersion() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	return fmt.Sprint(f.version)
}

func (f *fixture) generateName(a core.Action) (bool, runtime.Object, error) {
	obj, ok := a.(core.CreateAction).GetObject().(metav1.Object)
	if !ok {
		return false, nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		f.names++
		obj.SetName(fmt.Sprintf("%sx%04d", obj.GetGenerateName(), f.names))
	}
	if obj.GetUID() == "" {
		obj.SetUID(types.UID("uid-" + obj.GetName()))
	}
	if ts := obj.GetCreationTimestamp(); ts.IsZero() {
		obj.SetCreationTimestamp(metav1.NewTime(epoch.Add(time.Duration(f.names) * time.Second)))
	}
	return false, nil, nil
}

func gvrOf(o runtime.Object) schema.GroupVersionResource {
	switch o.(type) {
	case *appsv1alpha1.UnitedDeployment:
		return gvrUD
	case *appsv1alpha1.TApp:
		return gvrTApp
	case *appsv1.StatefulSet:
		return gvrSts
	case *appsv1.Deployment:
		return gvrDep
	case *appsv1.ControllerRevision:
		return gvrRev
	case *corev1.Pod:
		return corev1.SchemeGroupVersion.WithResource("pods")
	}
	panic(fmt.Sprintf("no resource for %T", o))
}

// cache puts an object into its informer's indexer.
func (f *fixture) cache(o runtime.Object) {
	f.t.Helper()
	var err error
	if p, ok := o.(*corev1.Pod); ok {
		err = f.pods.Update(p)
	} else {
		err = f.indexers[gvrOf(o)].Update(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

// tracker is the object tracker of the clientset serving o.
func (f *fixture) tracker(gvr schema.GroupVersionResource) core.ObjectTracker {
	if gvr.Group == appsv1alpha1.SchemeGroupVersion.Group {
		return f.client.Tracker()
	}
	return f.kubeClient.Tracker()
}

// put stores an object in both the API (tracker) and the cache, as if a user wrote it and
// the informer saw it. It is not recorded as an action.
func (f *fixture) put(o runtime.Object) {
	f.t.Helper()
	m := o.(metav1.Object)
	m.SetResourceVersion(f.nextVersion())
	tr := f.tracker(gvrOf(o))
	if _, err := tr.Get(gvrOf(o), m.GetNamespace(), m.GetName()); err == nil {
		if err := tr.Update(gvrOf(o), o, m.GetNamespace()); err != nil {
			f.t.Fatal(err)
		}
	} else if err := tr.Add(o); err != nil {
		f.t.Fatal(err)
	}
	f.cache(o)
}

func (f *fixture) sync(name string) []string {
	f.t.Helper()
	if err := f.trySync(name); err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	return f.actions()
}

func (f *fixture) trySync(name string) error {
	f.mu.Lock()
	f.log, f.refused = nil, nil
	f.mu.Unlock()
	return f.c.syncHandler(context.Background(), cache.ObjectName{Namespace: ns, Name: name})
}

func (f *fixture) writes() []core.Action {
	return f.calls(true)
}

// calls returns the calls of the last sync, list and watch excepted; the refused ones too when
// refused is true.
func (f *fixture) calls(refused bool) []core.Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []core.Action
	for i, a := range f.log {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" || (f.refused[i] && !refused) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// actions describes the API calls of the last sync, list and watch excepted, in order:
// "verb resource[/subresource] name" (a create is named by its generateName, or its name).
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.writes() {
		out = append(out, describe(a))
	}
	return out
}

func describe(a core.Action) string {
	res := a.GetResource().Resource
	if a.GetSubresource() != "" {
		res += "/" + a.GetSubresource()
	}
	name := ""
	switch a.GetVerb() {
	case "create":
		m := a.(core.CreateAction).GetObject().(metav1.Object)
		name = m.GetGenerateName()
		if name == "" {
			name = m.GetName()
		}
	case "update":
		name = a.(core.UpdateAction).GetObject().(metav1.Object).GetName()
	case "delete":
		name = a.(core.DeleteAction).GetName()
	case "get":
		name = a.(core.GetAction).GetName()
	}
	return a.GetVerb() + " " + res + " " + name
}

// written returns the object of the i-th write of the last sync.
func (f *fixture) written(i int) runtime.Object {
	f.t.Helper()
	w := f.writes()
	if i >= len(w) {
		f.t.Fatalf("no write %d", i)
	}
	switch a := w[i].(type) {
	case core.CreateAction:
		return a.GetObject()
	case core.UpdateAction:
		return a.GetObject()
	}
	f.t.Fatalf("write %d (%s) has no object", i, describe(w[i]))
	return nil
}

// observe mirrors the writes of the last sync that the API server accepted into the caches, as
// the informers would, and calls the workload event handlers (so expectations are observed).
func (f *fixture) observe() {
	f.t.Helper()
	f.observeActions(f.calls(false))
}

// observeActions mirrors the given writes into the caches.
func (f *fixture) observeActions(writes []core.Action) {
	f.t.Helper()
	for _, a := range writes {
		gvr := a.GetResource()
		idx := f.indexers[gvr]
		if idx == nil {
			continue
		}
		workload := gvr == gvrSts || gvr == gvrDep || gvr == gvrTApp
		switch a := a.(type) {
		case core.CreateAction, core.UpdateAction:
			m := a.(interface{ GetObject() runtime.Object }).GetObject().(metav1.Object)
			stored, err := f.tracker(gvr).Get(gvr, m.GetNamespace(), m.GetName())
			if err != nil {
				f.t.Fatalf("%s: %v", describe(a.(core.Action)), err)
			}
			_, existed, _ := idx.Get(stored)
			if err := idx.Update(stored); err != nil {
				f.t.Fatal(err)
			}
			if workload && !existed {
				f.handler.OnAdd(stored, false)
			}
		case core.DeleteAction:
			old, exists, _ := idx.GetByKey(a.GetNamespace() + "/" + a.GetName())
			if !exists {
				continue
			}
			if err := idx.Delete(old); err != nil {
				f.t.Fatal(err)
			}
			if workload {
				f.handler.OnDelete(old)
			}
		}
	}
}

// ud returns the cached UnitedDeployment.
func (f *fixture) ud(name string) *appsv1alpha1.UnitedDeployment {
	f.t.Helper()
	o, ok, err := f.indexers[gvrUD].GetByKey(ns + "/" + name)
	if err != nil || !ok {
		f.t.Fatalf("UnitedDeployment %s not cached: %v", name, err)
	}
	return o.(*appsv1alpha1.UnitedDeployment).DeepCopy()
}

// setSpec changes a UnitedDeployment's spec as a user would (bumping its generation).
func (f *fixture) setSpec(name string, mutate func(*appsv1alpha1.UnitedDeployment)) {
	f.t.Helper()
	ud := f.ud(name)
	mutate(ud)
	ud.Generation++
	f.put(ud)
}

// workloads returns the cached workloads of a kind, sorted by name.
func (f *fixture) workloads(gvr schema.GroupVersionResource) []metav1.Object {
	var out []metav1.Object
	for _, o := range f.indexers[gvr].List() {
		out = append(out, o.(metav1.Object))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// podTemplateOf returns a workload's pod template and replicas, and the kind of its pods' owner.
func podTemplateOf(o metav1.Object) (*corev1.PodTemplateSpec, int32, string) {
	switch w := o.(type) {
	case *appsv1.StatefulSet:
		return &w.Spec.Template, *w.Spec.Replicas, "StatefulSet"
	case *appsv1.Deployment:
		return &w.Spec.Template, *w.Spec.Replicas, "ReplicaSet"
	case *appsv1alpha1.TApp:
		return &w.Spec.Template, *w.Spec.Replicas, "TApp"
	}
	panic(fmt.Sprintf("%T", o))
}

// runPods replaces the pods of a workload with replicas ready pods made from its template, as
// its own controller would once a rollout finished.
func (f *fixture) runPods(o metav1.Object) {
	f.t.Helper()
	f.setPods(o, func(int) bool { return true })
}

// setPods replaces the pods of a workload: pod i is made from the workload's current template
// when current(i), else it keeps the revision label it had.
func (f *fixture) setPods(o metav1.Object, current func(i int) bool) {
	f.t.Helper()
	tmpl, replicas, ownerKind := podTemplateOf(o)
	old := map[string]*corev1.Pod{}
	for _, p := range f.pods.List() {
		p := p.(*corev1.Pod)
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Name == o.GetName() {
			old[p.Name] = p
			if err := f.pods.Delete(p); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	for i := int32(0); i < replicas; i++ {
		name := fmt.Sprintf("%s-%d", o.GetName(), i)
		labels := map[string]string{}
		for k, v := range tmpl.Labels {
			labels[k] = v
		}
		if prev := old[name]; prev != nil && !current(int(i)) {
			labels[appsv1alpha1.LabelRevision] = prev.Labels[appsv1alpha1.LabelRevision]
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: ns, Labels: labels, UID: types.UID("uid-" + name),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: o.GetName(), UID: o.GetUID(), Controller: ptrTo(true)}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		if err := f.pods.Add(pod); err != nil {
			f.t.Fatal(err)
		}
	}
}

// deletePods removes every pod of a workload from the cache.
func (f *fixture) deletePods(o metav1.Object) {
	for _, p := range f.pods.List() {
		if ref := metav1.GetControllerOf(p.(*corev1.Pod)); ref != nil && ref.Name == o.GetName() {
			_ = f.pods.Delete(p)
		}
	}
}

// settle syncs, mirrors the writes into the caches and runs every workload's pods from its
// template, until a sync makes no write. It fails the test after max rounds.
func (f *fixture) settle(name string, max int) {
	f.t.Helper()
	for round := 0; round < max; round++ {
		got := f.sync(name)
		if len(got) == 0 {
			f.events()
			return
		}
		f.observe()
		for _, gvr := range []schema.GroupVersionResource{gvrSts, gvrDep, gvrTApp} {
			for _, w := range f.workloads(gvr) {
				f.runPods(w)
			}
		}
	}
	f.t.Fatalf("UnitedDeployment %s did not settle in %d syncs; last: %v", name, max, f.actions())
}

// events drains the recorded Events.
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

func ptrTo[T any](v T) *T { return &v }

// wantActions compares the described actions of the last sync with want.
func (f *fixture) wantActions(want ...string) {
	f.t.Helper()
	got := f.actions()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		f.t.Fatalf("actions:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func cacheTombstone(o metav1.Object) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: o.GetNamespace() + "/" + o.GetName(), Obj: o}
}
