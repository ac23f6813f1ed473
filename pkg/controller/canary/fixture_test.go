package canary

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
)

const ns = "shop"

var (
	deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
	hpasGVR        = autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")
	canariesGVR    = v1alpha1.SchemeGroupVersion.WithResource("canaries")
	start          = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

// fixture is a controller over fake clientsets whose listers are fed by hand: refresh copies
// what the fake API servers hold into the listers, like informers catching up.
type fixture struct {
	t        *testing.T
	kube     *k8sfake.Clientset
	client   *fake.Clientset
	ctrl     *Controller
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder

	canaryStore     cache.Indexer
	deploymentStore cache.Indexer
	hpaStore        cache.Indexer

	actions []string // writes to either API server, in order
	patches []string // the bodies of the patches among them, in order
}

func newFixture(t *testing.T, canary *v1alpha1.Canary, deployments ...*appsv1.Deployment) *fixture {
	t.Helper()
	var kubeObjects []runtime.Object
	for _, d := range deployments {
		kubeObjects = append(kubeObjects, d)
	}
	f := &fixture{
		t:        t,
		kube:     k8sfake.NewClientset(kubeObjects...),
		client:   fake.NewSimpleClientset(canary),
		clock:    testingclock.NewFakeClock(start),
		recorder: record.NewFakeRecorder(1000),
	}
	record := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
			f.actions = append(f.actions, describe(a))
			if p, ok := a.(k8stesting.PatchActionImpl); ok {
				f.patches = append(f.patches, string(p.GetPatch()))
			}
		}
		return false, nil, nil
	}
	// Like the API server, refuse a Canary update whose resourceVersion is not the stored one,
	// and bump it on every update (the simple fake tracker does neither).
	f.client.PrependReactor("update", "canaries", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.Canary).DeepCopy()
		stored, err := f.client.Tracker().Get(canariesGVR, ns, obj.Name)
		if err != nil {
			return true, nil, err
		}
		rv := stored.(*v1alpha1.Canary).ResourceVersion
		if obj.ResourceVersion != rv {
			return true, nil, apierrors.NewConflict(canariesGVR.GroupResource(), obj.Name, fmt.Errorf("resourceVersion %s, stored %s", obj.ResourceVersion, rv))
		}
		obj.ResourceVersion = nextRV(rv)
		if err := f.client.Tracker().Update(canariesGVR, obj, ns); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
	// Like the API server, refuse a Canary merge patch carrying a resourceVersion other than the
	// stored one, answer a JSON patch that does not apply with 422, bump the resourceVersion on
	// every patch, and remove a deleted Canary once its last finalizer is gone.
	f.client.PrependReactor("patch", "canaries", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchActionImpl)
		stored, err := f.client.Tracker().Get(canariesGVR, ns, pa.GetName())
		if err != nil {
			return true, nil, err
		}
		rv := stored.(*v1alpha1.Canary).ResourceVersion
		if pa.GetPatchType() == types.MergePatchType {
			var p struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(pa.GetPatch(), &p); err != nil {
				return true, nil, err
			}
			if p.Metadata.ResourceVersion != "" && p.Metadata.ResourceVersion != rv {
				return true, nil, apierrors.NewConflict(canariesGVR.GroupResource(), pa.GetName(),
					fmt.Errorf("resourceVersion %s, stored %s", p.Metadata.ResourceVersion, rv))
			}
		}
		_, obj, err := k8stesting.ObjectReaction(f.client.Tracker())(a)
		if err != nil {
			if pa.GetPatchType() == types.JSONPatchType {
				return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: v1alpha1.SchemeGroupVersion.Group, Kind: Kind},
					pa.GetName(), field.ErrorList{field.Invalid(field.NewPath("patch"), string(pa.GetPatch()), err.Error())})
			}
			return true, nil, err
		}
		cn := obj.(*v1alpha1.Canary)
		cn.ResourceVersion = nextRV(rv)
		if cn.DeletionTimestamp != nil && len(cn.Finalizers) == 0 {
			return true, cn, f.client.Tracker().Delete(canariesGVR, ns, cn.Name)
		}
		return true, cn, f.client.Tracker().Update(canariesGVR, cn, ns)
	})
	f.kube.PrependReactor("*", "*", record)
	f.client.PrependReactor("*", "*", record)
	kubeInformers := kubeinformers.NewSharedInformerFactory(f.kube, 0)
	canaryInformers := externalversions.NewSharedInformerFactory(f.client, 0)
	c, err := NewController(Config{
		KubeClient:  f.kube,
		Client:      f.client,
		Canaries:    canaryInformers.Apps().V1alpha1().Canaries(),
		Deployments: kubeInformers.Apps().V1().Deployments(),
		HPAs:        kubeInformers.Autoscaling().V2().HorizontalPodAutoscalers(),
		Recorder:    f.recorder,
		Clock:       f.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.ctrl = c
	f.canaryStore = canaryInformers.Apps().V1alpha1().Canaries().Informer().GetIndexer()
	f.deploymentStore = kubeInformers.Apps().V1().Deployments().Informer().GetIndexer()
	f.hpaStore = kubeInformers.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer()
	f.refresh()
	return f
}

// refresh makes the listers show what the fake API servers hold.
func (f *fixture) refresh() {
	f.t.Helper()
	f.replaceStore(f.canaryStore, f.client.Tracker(), canariesGVR, "Canary")
	f.replaceStore(f.deploymentStore, f.kube.Tracker(), deploymentsGVR, "Deployment")
	f.replaceStore(f.hpaStore, f.kube.Tracker(), hpasGVR, "HorizontalPodAutoscaler")
}

func (f *fixture) replaceStore(store cache.Indexer, tracker k8stesting.ObjectTracker, gvr schema.GroupVersionResource, kind string) {
	f.t.Helper()
	list, err := tracker.List(gvr, gvr.GroupVersion().WithKind(kind), ns)
	if err != nil {
		f.t.Fatal(err)
	}
	var items []interface{}
	switch l := list.(type) {
	case *v1alpha1.CanaryList:
		for i := range l.Items {
			items = append(items, l.Items[i].DeepCopy())
		}
	case *appsv1.DeploymentList:
		for i := range l.Items {
			items = append(items, l.Items[i].DeepCopy())
		}
	case *autoscalingv2.HorizontalPodAutoscalerList:
		for i := range l.Items {
			items = append(items, l.Items[i].DeepCopy())
		}
	default:
		f.t.Fatalf("unexpected list %T", list)
	}
	if err := store.Replace(items, ""); err != nil {
		f.t.Fatal(err)
	}
}

// sync runs one sync of the Canary and returns the API actions it made, described by describe.
func (f *fixture) sync() []string {
	f.t.Helper()
	actions, err := f.trySync()
	if err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	return actions
}

func (f *fixture) trySync() ([]string, error) {
	f.t.Helper()
	f.actions, f.patches = nil, nil
	err := f.ctrl.syncHandler(context.Background(), cache.ObjectName{Namespace: ns, Name: "checkout"})
	return f.actions, err
}

// step refreshes the listers, syncs, and checks the exact API actions.
func (f *fixture) step(want ...string) {
	f.t.Helper()
	f.refresh()
	got := f.sync()
	if !slices.Equal(got, want) {
		f.t.Fatalf("actions:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
}

// settled checks that a resync of an unchanged world writes nothing.
func (f *fixture) settled() {
	f.t.Helper()
	f.step()
}

// describe renders an action as "verb resource[/subresource] name [patch]". Merge patches of
// Deployments are shown in full; merge patches of Canaries by the metadata fields they set
// ("merge finalizers", "merge annotations"); JSON patches in full up to 300 bytes, longer ones
// as "json".
func describe(a k8stesting.Action) string {
	res := a.GetResource().Resource
	if sub := a.GetSubresource(); sub != "" {
		res += "/" + sub
	}
	switch a := a.(type) {
	case k8stesting.CreateActionImpl:
		return fmt.Sprintf("create %s %s", res, a.GetObject().(metav1.Object).GetName())
	case k8stesting.UpdateActionImpl:
		return fmt.Sprintf("update %s %s", res, a.GetObject().(metav1.Object).GetName())
	case k8stesting.PatchActionImpl:
		switch a.GetPatchType() {
		case types.MergePatchType:
			if res == "deployments" {
				return fmt.Sprintf("patch %s %s %s", res, a.GetName(), a.GetPatch())
			}
			var p struct {
				Metadata map[string]json.RawMessage `json:"metadata"`
			}
			_ = json.Unmarshal(a.GetPatch(), &p)
			var fields []string
			for k := range p.Metadata {
				if k != "resourceVersion" {
					fields = append(fields, k)
				}
			}
			slices.Sort(fields)
			return strings.TrimSpace(fmt.Sprintf("patch %s %s merge %s", res, a.GetName(), strings.Join(fields, ",")))
		case types.JSONPatchType:
			if len(a.GetPatch()) <= 300 {
				return fmt.Sprintf("patch %s %s %s", res, a.GetName(), a.GetPatch())
			}
			return fmt.Sprintf("patch %s %s json", res, a.GetName())
		default:
			return fmt.Sprintf("patch %s %s %s", res, a.GetName(), a.GetPatchType())
		}
	case k8stesting.DeleteActionImpl:
		return fmt.Sprintf("delete %s %s", res, a.GetName())
	default:
		return fmt.Sprintf("%s %s", a.GetVerb(), res)
	}
}

// canary returns the Canary as the fake API server holds it.
func (f *fixture) canary() *v1alpha1.Canary {
	f.t.Helper()
	c, err := f.client.AppsV1alpha1().Canaries(ns).Get(context.Background(), "checkout", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// deployment returns a Deployment as the fake API server holds it (nil if there is none).
func (f *fixture) deployment(name string) *appsv1.Deployment {
	f.t.Helper()
	d, err := f.kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// editCanary changes the Canary's spec in the fake API server (bumping its generation).
func (f *fixture) editCanary(edit func(*v1alpha1.Canary)) {
	f.t.Helper()
	c := f.canary()
	edit(c)
	c.Generation++
	c.ResourceVersion = nextRV(c.ResourceVersion)
	if err := f.client.Tracker().Update(canariesGVR, c, ns); err != nil {
		f.t.Fatal(err)
	}
}

func nextRV(rv string) string {
	n, _ := strconv.Atoi(rv)
	return strconv.Itoa(n + 1)
}

// editDeployment changes a Deployment in the fake API server without recording an action.
func (f *fixture) editDeployment(name string, edit func(*appsv1.Deployment)) {
	f.t.Helper()
	d := f.deployment(name)
	if d == nil {
		f.t.Fatalf("no Deployment %s", name)
	}
	edit(d)
	if err := f.kube.Tracker().Update(deploymentsGVR, d, ns); err != nil {
		f.t.Fatal(err)
	}
}

// available plays kube-controller-manager: the Deployment runs its spec.replicas pods on its
// current template, n of them available.
func (f *fixture) available(name string, n int32) {
	f.t.Helper()
	f.editDeployment(name, func(d *appsv1.Deployment) {
		r := replicasOf(d)
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           r,
			UpdatedReplicas:    r,
			ReadyReplicas:      n,
			AvailableReplicas:  n,
		}
	})
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

// wantEvent checks that an event with the given type and reason was recorded since the last
// call, and drains the others.
func (f *fixture) wantEvent(prefix string) {
	f.t.Helper()
	events := f.events()
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return
		}
	}
	f.t.Errorf("no event %q among %q", prefix, events)
}

// status checks the phase, current batch and batch states of the Canary in the API server.
func (f *fixture) status(phase v1alpha1.CanaryPhase, current int32, states ...v1alpha1.BatchState) *v1alpha1.Canary {
	f.t.Helper()
	c := f.canary()
	st := c.Status
	var got []v1alpha1.BatchState
	for _, b := range st.Batches {
		got = append(got, b.State)
	}
	if st.Phase != phase || st.CurrentBatch != current || !slices.Equal(got, states) {
		f.t.Fatalf("status: phase %s, batch %d, states %v; want %s, %d, %v (message %q)",
			st.Phase, st.CurrentBatch, got, phase, current, states, st.Message)
	}
	if st.ObservedGeneration != c.Generation {
		f.t.Errorf("observedGeneration %d, want %d", st.ObservedGeneration, c.Generation)
	}
	return c
}

// newCanary is checkout's release of nginx 1.27: 10 replicas in 4 batches (1, 4, 7, 10), with
// a surge bound of 100% (10 pods) that none of the batch tests reaches, so that each batch's
// writes come in one sync; pair_scale_test.go covers the bound itself.
func newCanary(pause v1alpha1.PauseType) *v1alpha1.Canary {
	return &v1alpha1.Canary{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Canary"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "checkout", Namespace: ns, UID: "canary-uid", Generation: 1, ResourceVersion: "1",
		},
		Spec: v1alpha1.CanarySpec{
			Replicas:  10,
			StableRef: v1alpha1.StableRef{Name: "checkout"},
			Canary: v1alpha1.CanaryTarget{
				Name:     "checkout-canary",
				Template: podTemplate("canary", "nginx:1.27"),
			},
			Batches:         ptr.To[int32](4),
			PauseType:       pause,
			MinReadySeconds: 5,
			MaxSurge:        ptr.To(intstr.FromString("100%")),
		},
	}
}

func podTemplate(track, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "checkout", "track": track}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "checkout", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File",
		}}, RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst},
	}
}

// newStable is the stable Deployment with replicas pods, all available.
func newStable(replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: ns, UID: "stable-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout", "track": "stable"}},
			Template: podTemplate("stable", "nginx:1.26"),
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: replicas, AvailableReplicas: replicas,
		},
	}
}

// snapshotOf is the v1alpha1.AnnotationStableSnapshot value for d.
func snapshotOf(d *appsv1.Deployment) string {
	raw, _ := json.Marshal(stableSnapshot{Deployment: d.Name, Replicas: *d.Spec.Replicas, Template: d.Spec.Template})
	return string(raw)
}

// midRelease builds a fixture at batch `current` of a release of newCanary(pause), which has
// the controller's finalizer: batches before it completed, the canary Deployment scaled to canary pods, all available, and the
// stable Deployment at stable pods, all available. The current batch is in state state.
func midRelease(t *testing.T, pause v1alpha1.PauseType, current int32, state v1alpha1.BatchState, canary, stable int32, edit func(*v1alpha1.Canary)) *fixture {
	t.Helper()
	cn := newCanary(pause)
	st := newStable(stable)
	orig := newStable(10)
	cn.Annotations = map[string]string{v1alpha1.AnnotationStableSnapshot: snapshotOf(orig)}
	cn.Finalizers = []string{v1alpha1.FinalizerOrphanCanary}
	plan := []int32{1, 4, 7, 10}
	t0 := metav1.NewTime(start.Add(-time.Hour))
	for i, size := range plan {
		b := v1alpha1.CanaryBatchStatus{Index: int32(i + 1), CanaryReplicas: size, State: v1alpha1.BatchPending}
		switch {
		case int32(i+1) < current:
			b.State, b.StartTime, b.FinishTime = v1alpha1.BatchCompleted, &t0, &t0
		case int32(i+1) == current:
			b.State, b.StartTime = state, &t0
			if state != v1alpha1.BatchUpgrading {
				b.FinishTime = &t0
			}
		}
		cn.Status.Batches = append(cn.Status.Batches, b)
	}
	cn.Status.CurrentBatch = current
	cn.Status.Phase = v1alpha1.CanaryProgressing
	if state == v1alpha1.BatchPaused {
		cn.Status.Phase = v1alpha1.CanaryPaused
	}
	if edit != nil {
		edit(cn)
	}
	cd := newPairPlan(&decision{canary: cn}, specPair(cn)).newCanaryDeployment(canary)
	cd.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	cd.UID = "canary-deployment-uid"
	cd.Status = appsv1.DeploymentStatus{Replicas: canary, UpdatedReplicas: canary, ReadyReplicas: canary, AvailableReplicas: canary}
	return newFixture(t, cn, st, cd)
}

// refuse makes the fake API server refuse verb on the Deployment name with a Forbidden error
// carrying msg, for as long as the returned switch is on. The refused action is recorded like
// any other.
func (f *fixture) refuse(verb, name, msg string) *bool {
	on := true
	f.kube.PrependReactor(verb, "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		target := ""
		switch a := a.(type) {
		case k8stesting.CreateAction:
			target = a.GetObject().(metav1.Object).GetName()
		case k8stesting.PatchAction:
			target = a.GetName()
		}
		if !on || target != name {
			return false, nil, nil
		}
		f.actions = append(f.actions, describe(a)) // the recording reactor comes after this one
		return true, nil, apierrors.NewForbidden(deploymentsGVR.GroupResource(), name, errors.New(msg))
	})
	return &on
}

// pairOf is the Deployment pair's side of a plan.
func pairOf(r *plan) *pairPlan { return r.rel.(*pairPlan) }

// inPlace is the in-place release's side of a plan.
func inPlace(r *plan) *inPlacePlan { return r.rel.(*inPlacePlan) }
