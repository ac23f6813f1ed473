package agent

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/diff"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	workloadfake "github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
)

var someManagedFields = []metav1.ManagedFieldsEntry{{
	Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
	FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)},
}}

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, Labels: labels,
		Annotations:   map[string]string{"keep": "me"},
		ManagedFields: someManagedFields,
	}}
}

func managedLabels() map[string]string {
	return map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByAgent}
}

func TestStripManagedFields(t *testing.T) {
	p := pod("ns", "p", managedLabels())
	out, err := StripManagedFields(p)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.ManagedFields != nil {
		t.Errorf("managedFields kept: %v", got.ManagedFields)
	}
	if got.Name != "p" || got.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByAgent || got.Annotations["keep"] != "me" {
		t.Errorf("stripped more than managedFields: %+v", got.ObjectMeta)
	}
	// Idempotent.
	if again, err := StripManagedFields(got); err != nil || again.(*corev1.Pod).ManagedFields != nil {
		t.Errorf("second pass: %v %v", again, err)
	}

	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "t", ManagedFields: someManagedFields}}
	if out, _ := StripManagedFields(tapp); out.(*v1alpha1.TApp).ManagedFields != nil {
		t.Error("TApp managedFields kept")
	}

	tomb := cache.DeletedFinalStateUnknown{Key: "ns/q", Obj: pod("ns", "q", nil)}
	out, err = StripManagedFields(tomb)
	if err != nil {
		t.Fatal(err)
	}
	if inner := out.(cache.DeletedFinalStateUnknown).Obj.(*corev1.Pod); inner.ManagedFields != nil {
		t.Error("tombstone's object keeps managedFields")
	}

	for _, notObject := range []interface{}{"string", 42, nil} {
		if out, err := StripManagedFields(notObject); err != nil || out != notObject {
			t.Errorf("%v: %v %v", notObject, out, err)
		}
	}
}

// syncFactories starts the factories and waits for their caches, failing the test on a timeout.
func syncFactories(t *testing.T, f *Factories) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	f.Start(ctx.Done())
	wait, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	if unsynced := f.WaitForCacheSync(wait.Done()); len(unsynced) > 0 {
		t.Fatalf("caches did not sync: %v", unsynced)
	}
}

// listWatchSelectors returns the label selectors of the list and watch actions on a resource.
func listWatchSelectors(actions []k8stesting.Action, resource string) []string {
	var selectors []string
	for _, a := range actions {
		if a.GetResource().Resource != resource {
			continue
		}
		switch a := a.(type) {
		case k8stesting.ListAction:
			selectors = append(selectors, "list:"+a.GetListRestrictions().Labels.String())
		case k8stesting.WatchAction:
			selectors = append(selectors, "watch:"+a.GetWatchRestrictions().Labels.String())
		}
	}
	return selectors
}

func TestManagedFactoryUsesLabelSelector(t *testing.T) {
	if ManagedSelector != "app.kubernetes.io/managed-by=workload-agent" {
		t.Fatalf("ManagedSelector %q", ManagedSelector)
	}
	kube := kubefake.NewClientset(
		pod("ns", "ours", managedLabels()),
		pod("ns", "theirs", map[string]string{"app": "x"}),
		pod("ns", "canary-pod", map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByAgent, v1alpha1.LabelCanaryName: "c"}),
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-ours", Labels: managedLabels()}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-theirs"}},
	)
	f := NewFactories(kube, workloadfake.NewSimpleClientset(), "", 0)
	pods := f.Managed.Pods()
	pvcs := f.Managed.PersistentVolumeClaims()
	pods.Informer()
	pvcs.Informer()
	syncFactories(t, f)

	// Pods: the managed-by selector less the canary Deployments' pods, which only a podHealth
	// check reads, from the API server.
	for resource, want := range map[string]string{"pods": ManagedPodSelector, "persistentvolumeclaims": ManagedSelector} {
		selectors := listWatchSelectors(kube.Actions(), resource)
		if len(selectors) == 0 {
			t.Errorf("no list or watch of %s: %v", resource, kube.Actions())
		}
		for _, s := range selectors {
			if s != "list:"+want && s != "watch:"+want {
				t.Errorf("%s listed/watched with selector %s, want %s", resource, s, want)
			}
		}
	}

	cached, err := pods.Lister().List(everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != 1 || cached[0].Name != "ours" {
		t.Errorf("managed pod cache holds %v, want only the pod labelled managed-by and not canary", names(cached))
	}
	if cached[0].ManagedFields != nil {
		t.Error("managed pod cache keeps managedFields: the transform is not installed")
	}
	claims, err := pvcs.Lister().List(everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].Name != "data-ours" {
		t.Errorf("managed PVC cache holds %d claims, want only data-ours", len(claims))
	}
}

func TestFactoriesScopeAndTransform(t *testing.T) {
	kube := kubefake.NewClientset(
		&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "a", Labels: managedLabels(), ManagedFields: someManagedFields}},
		&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "b", Labels: managedLabels(), ManagedFields: someManagedFields}},
	)
	client := workloadfake.NewSimpleClientset(
		&v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "t", ManagedFields: someManagedFields}},
		&v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "u", ManagedFields: someManagedFields}},
	)
	f := NewFactories(kube, client, "team-a", 0)
	revs := f.Managed.ControllerRevisions()
	tapps := f.Workloads.Apps().V1alpha1().TApps()
	revs.Informer()
	tapps.Informer()
	syncFactories(t, f)

	for _, a := range kube.Actions() {
		if a.GetResource().Resource == "controllerrevisions" && a.GetNamespace() != "team-a" {
			t.Errorf("managed factory not scoped to team-a: %s in %q", a.GetVerb(), a.GetNamespace())
		}
	}
	got, _ := revs.Lister().List(everything())
	if len(got) != 1 || got[0].Name != "a" || got[0].ManagedFields != nil {
		t.Errorf("controllerrevision cache: %d objects, want a only and without managedFields", len(got))
	}
	ts, _ := tapps.Lister().List(everything())
	if len(ts) != 1 || ts[0].Name != "t" || ts[0].ManagedFields != nil {
		t.Errorf("TApp cache: %d objects, want t only and without managedFields", len(ts))
	}
}

func names[T interface{ GetName() string }](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func everything() labels.Selector { return labels.Everything() }

// referencedUnfiltered are the native resources an informer may list and watch without the
// managed-by selector, each with the controller that references objects of it it did not
// create. The Canary's stable Deployment is watched by name (the canary package's watchedDeployments,
// tested in pkg/controller/canary), not by an informer of every Deployment; HorizontalPodAutoscalers
// are listed whole, as HTTPRoutes are: a Canary refuses one by the Deployment it scales, which no
// label tells, and they are few (one per autoscaled workload, with no pod template).
var referencedUnfiltered = map[string]string{"horizontalpodautoscalers": "canary"}

// withoutNativeInformer are the controllers that start no informer of a native kind, each with
// what it reads instead.
var withoutNativeInformer = map[string]string{
	"notifications": "Canaries from the shared informer; its ConfigMap, Secret and a Canary's namespace with a get when it sends",
}

// Every informer the registered controllers start lists and watches native objects only through
// the managed-by selector, so that the agent's memory does not grow with unrelated objects; the
// agent's own kinds (TApps, UnitedDeployments, Canaries) are all its to reconcile.
func TestEveryControllerInformerIsFiltered(t *testing.T) {
	for name, initFunc := range Controllers {
		t.Run(name, func(t *testing.T) {
			kube := kubefake.NewClientset()
			f := NewFactories(kube, workloadfake.NewSimpleClientset(), "", 0)
			c, err := initFunc(&ctrl.Context{
				KubeClient: kube, Client: workloadfake.NewSimpleClientset(),
				ManagedInformers: f.Managed, ManagedSelector: ManagedSelector, Informers: f.Workloads,
				ReferencedInformers: f.Referenced,
				EventRecorder:       func(string) record.EventRecorder { return record.NewFakeRecorder(100) },
				Clock:               clock.RealClock{},
				Workers:             1,
			})
			if err != nil || c == nil {
				t.Fatalf("Init: %v, %v", c, err)
			}
			syncFactories(t, f)
			listed := 0
			for _, a := range kube.Actions() {
				resource := a.GetResource().Resource
				var selector string
				switch a := a.(type) {
				case k8stesting.ListAction:
					selector = a.GetListRestrictions().Labels.String()
				case k8stesting.WatchAction:
					selector = a.GetWatchRestrictions().Labels.String()
				default:
					t.Errorf("informer start made a %s of %s", a.GetVerb(), resource)
					continue
				}
				listed++
				want := ManagedSelector
				if resource == "pods" {
					want = ManagedPodSelector
				}
				if selector != want && referencedUnfiltered[resource] != name {
					t.Errorf("%s of %s with selector %q, want %q", a.GetVerb(), resource, selector, want)
				}
			}
			if (listed == 0) != (withoutNativeInformer[name] != "") {
				t.Errorf("%d lists and watches of a native resource (listed in withoutNativeInformer: %t): %v", listed, withoutNativeInformer[name] != "", kube.Actions())
			}
		})
	}
}

// fullPod is a pod as the API server returns one of a TApp: admission's service account volume
// and tolerations, and a container with everything a template may set.
func fullPod() *corev1.Pod {
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}
	always := corev1.ContainerRestartPolicyAlways
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "web-0", UID: "u1", ResourceVersion: "7", Labels: managedLabels(),
			Annotations: map[string]string{"a": "b"}, ManagedFields: someManagedFields,
			OwnerReferences: []metav1.OwnerReference{{Kind: "TApp", Name: "web", UID: "t1"}},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}},
			InitContainers: []corev1.Container{{Name: "sidecar", Image: "proxy:1", RestartPolicy: &always, Resources: res,
				Args: []string{"--x"}, VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run"}}}},
			Containers: []corev1.Container{{Name: "main", Image: "app:v1", Resources: res,
				Command: []string{"/app"}, Env: []corev1.EnvVar{{Name: "K", Value: "V"}},
				Ports:          []corev1.ContainerPort{{ContainerPort: 80}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 5},
				VolumeMounts:   []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run"}}}},
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: "tapp.apps.workload.dev/InPlaceUpdateReady"}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			NodeName:                      "node-1",
			Hostname:                      "web-0",
			TerminationGracePeriodSeconds: &grace,
			Tolerations:                   []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists}},
			Affinity:                      &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}},
			NodeSelector:                  map[string]string{"zone": "a"},
			SecurityContext:               &corev1.PodSecurityContext{},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "app:v1", Ready: true, RestartCount: 2, Resources: &res}},
			PodIP:             "10.0.0.1",
		},
	}
}

func TestTrimPodKeepsWhatControllersRead(t *testing.T) {
	p := fullPod()
	want := fullPod()
	want.ManagedFields = nil
	want.Spec.Volumes, want.Spec.Tolerations, want.Spec.Affinity, want.Spec.NodeSelector, want.Spec.SecurityContext = nil, nil, nil, nil, nil
	want.Spec.InitContainers = []corev1.Container{{Name: "sidecar", Image: "proxy:1", RestartPolicy: p.Spec.InitContainers[0].RestartPolicy, Resources: p.Spec.InitContainers[0].Resources}}
	want.Spec.Containers = []corev1.Container{{Name: "main", Image: "app:v1", Resources: p.Spec.Containers[0].Resources}}

	out, err := TrimPods(p)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(want, out) {
		t.Errorf("trimmed pod (-want +got):\n%s", diff.Diff(want, out))
	}

	tomb, err := TrimPods(cache.DeletedFinalStateUnknown{Key: "ns/web-0", Obj: fullPod()})
	if err != nil {
		t.Fatal(err)
	}
	if got := tomb.(cache.DeletedFinalStateUnknown).Obj; !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("tombstone's pod (-want +got):\n%s", diff.Diff(want, got))
	}

	// Other kinds lose only their managedFields.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", ManagedFields: someManagedFields},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}
	out, _ = TrimPods(pvc)
	if got := out.(*corev1.PersistentVolumeClaim); got.ManagedFields != nil || got.Spec.VolumeName != "pv-1" {
		t.Errorf("PVC after the transform: %+v", got)
	}
}

func TestManagedFactoryTrimsPods(t *testing.T) {
	kube := kubefake.NewClientset(fullPod())
	f := NewFactories(kube, workloadfake.NewSimpleClientset(), "", 0)
	pods := f.Managed.Pods()
	pods.Informer()
	syncFactories(t, f)
	got, err := pods.Lister().Pods("ns").Get("web-0")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Volumes) != 0 || got.Spec.Containers[0].Env != nil || got.Spec.Containers[0].Image != "app:v1" {
		t.Errorf("managed pod cache: volumes %v, env %v, image %q: want the pod trimmed, its image kept",
			got.Spec.Volumes, got.Spec.Containers[0].Env, got.Spec.Containers[0].Image)
	}
}
