package get

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clienttesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/history/historytest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/status"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func init() {
	now = func() time.Time { return t0 }
	workload.Now = now
}

func meta(name string, uid string, age time.Duration, lbls map[string]string, owner metav1.Object, ownerKind schema) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace, UID: types.UID(uid), Labels: lbls,
		CreationTimestamp: metav1.NewTime(t0.Add(-age)), Generation: 1}
	if owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: ownerKind.apiVersion, Kind: ownerKind.kind,
			Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
	}
	return m
}

type schema struct{ apiVersion, kind string }

var (
	tappKind = schema{"apps.workload.dev/v1alpha1", "TApp"}
	udKind   = schema{"apps.workload.dev/v1alpha1", "UnitedDeployment"}
	deployK  = schema{"apps/v1", "Deployment"}
	rsKind   = schema{"apps/v1", "ReplicaSet"}
	stsKind  = schema{"apps/v1", "StatefulSet"}
	dsKind   = schema{"apps/v1", "DaemonSet"}
)

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// pod is a one-container pod; state is "ready", "crash", "pending" or "terminating".
func pod(name string, lbls map[string]string, owner metav1.Object, ownerKind schema, age time.Duration, state string, restarts int32) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: meta(name, "uid-"+name, age, lbls, owner, ownerKind)}
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "app:v1"}}
	cs := corev1.ContainerStatus{Name: "app", RestartCount: restarts}
	switch state {
	case "ready", "terminating":
		p.Status.Phase = corev1.PodRunning
		cs.Ready = true
		cs.State.Running = &corev1.ContainerStateRunning{}
		if state == "terminating" {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
		}
	case "crash":
		p.Status.Phase = corev1.PodRunning
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	case "pending":
		p.Status.Phase = corev1.PodPending
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	return p
}

func tappObjects() []runtime.Object {
	t := &v1alpha1.TApp{ObjectMeta: meta("web", "uid-web", 48*time.Hour, nil, nil, schema{})}
	t.Spec.Replicas = ptr.To[int32](5)
	t.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels("app", "web")}
	t.Spec.Templates = map[string]string{"4": "canary"}
	t.Spec.Statuses = map[string]v1alpha1.InstanceDesiredStatus{"3": v1alpha1.InstanceKilled}
	t.Status = v1alpha1.TAppStatus{ObservedGeneration: 1, Replicas: 4, ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: 4,
		AppStatus: v1alpha1.AppRunning,
		Statuses:  map[string]v1alpha1.InstanceStatus{"0": "Running", "1": "Running", "2": "Running", "3": "Killed", "4": "Updating"}}
	objs := []runtime.Object{t}
	podLabels := func(id string) map[string]string {
		return labels("app", "web", v1alpha1.LabelTAppName, "web", v1alpha1.LabelInstanceID, id)
	}
	objs = append(objs,
		pod("web-0", podLabels("0"), t, tappKind, 48*time.Hour, "ready", 0),
		pod("web-1", podLabels("1"), t, tappKind, 47*time.Hour, "ready", 2),
		pod("web-2", podLabels("2"), t, tappKind, 3*time.Hour, "ready", 0),
		pod("web-4", podLabels("4"), t, tappKind, 90*time.Second, "crash", 5),
		// Same app label, another TApp: not part of this tree.
		pod("web-other-0", labels("app", "web", v1alpha1.LabelTAppName, "web-other", v1alpha1.LabelInstanceID, "0"), nil, schema{}, time.Hour, "ready", 0),
		// An unrelated pod of the namespace.
		pod("cache-0", labels("app", "cache"), nil, schema{}, time.Hour, "ready", 0),
	)
	return objs
}

func udObjects() []runtime.Object {
	u := &v1alpha1.UnitedDeployment{ObjectMeta: meta("orders", "uid-orders", 24*time.Hour, nil, nil, schema{})}
	u.Spec.Replicas = ptr.To[int32](4)
	u.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels("app", "orders")}
	u.Spec.Template.StatefulSetTemplate = &v1alpha1.StatefulSetTemplateSpec{}
	u.Status = v1alpha1.UnitedDeploymentStatus{ObservedGeneration: 1, Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 2, UpdatedReadyReplicas: 2,
		CurrentRevision: "orders-5d8f7", UpdatedRevision: "orders-7c9b4",
		SubsetStatuses: []v1alpha1.SubsetStatus{
			{Name: "zone-a", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2},
			{Name: "zone-b", Replicas: 2, ReadyReplicas: 2, Partition: 2}}}
	objs := []runtime.Object{u}
	for _, z := range []struct{ zone, name, rev string }{{"zone-b", "orders-zone-b-k2x9p", "orders-5d8f7"}, {"zone-a", "orders-zone-a-7hq4m", "orders-7c9b4"}} {
		s := &appsv1.StatefulSet{ObjectMeta: meta(z.name, "uid-"+z.name, 24*time.Hour,
			labels(v1alpha1.LabelUnitedDeploymentName, "orders", v1alpha1.LabelSubsetName, z.zone, v1alpha1.LabelRevision, z.rev), u, udKind)}
		s.Spec.Replicas = ptr.To[int32](2)
		sel := labels("app", "orders", v1alpha1.LabelUnitedDeploymentName, "orders", v1alpha1.LabelSubsetName, z.zone)
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: z.name + "-1", UpdateRevision: z.name + "-1"}
		objs = append(objs, s)
		for i := 0; i < 2; i++ {
			pl := labels("app", "orders", v1alpha1.LabelUnitedDeploymentName, "orders", v1alpha1.LabelSubsetName, z.zone,
				appsv1.ControllerRevisionHashLabelKey, z.name+"-1")
			objs = append(objs, pod(z.name+"-"+string(rune('0'+i)), pl, s, stsKind, 20*time.Hour, "ready", 0))
		}
	}
	return objs
}

// deployment is a Deployment with a ReplicaSet per revision (name suffix → pods of it).
func deployment(name string, replicas int32, sel map[string]string, lbls map[string]string, revisions []struct {
	hash string
	pods []string
}) []runtime.Object {
	d := &appsv1.Deployment{ObjectMeta: meta(name, "uid-"+name, 10*time.Hour, lbls, nil, schema{})}
	d.Spec.Replicas = ptr.To(replicas)
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas}
	objs := []runtime.Object{d}
	for i, r := range revisions {
		rsLabels := labels("pod-template-hash", r.hash)
		for k, v := range sel {
			rsLabels[k] = v
		}
		rs := &appsv1.ReplicaSet{ObjectMeta: meta(name+"-"+r.hash, "uid-"+name+"-"+r.hash, 10*time.Hour, rsLabels, d, deployK)}
		rs.Annotations = map[string]string{"deployment.kubernetes.io/revision": string(rune('1' + i))}
		rs.Spec.Replicas = ptr.To(int32(len(r.pods)))
		rs.Status.ReadyReplicas = int32(len(r.pods))
		objs = append(objs, rs)
		for _, p := range r.pods {
			objs = append(objs, pod(p, rsLabels, rs, rsKind, 5*time.Hour, "ready", 0))
		}
	}
	return objs
}

type rev = struct {
	hash string
	pods []string
}

func canaryObjects() []runtime.Object {
	c := &v1alpha1.Canary{ObjectMeta: meta("checkout", "uid-canary-checkout", 2*time.Hour, nil, nil, schema{})}
	c.Spec.Replicas = 3
	c.Spec.Batches = ptr.To[int32](2)
	c.Spec.StableRef.Name = "checkout"
	c.Spec.Canary.Name = "checkout-canary"
	c.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryPaused, CurrentBatch: 1,
		CanaryReplicas: 1, CanaryAvailable: 1, StableReplicas: 2, StableAvailable: 2,
		Batches: []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 1, State: v1alpha1.BatchPaused, StartTime: ptr.To(metav1.NewTime(t0.Add(-30 * time.Minute)))},
			{Index: 2, CanaryReplicas: 3, State: v1alpha1.BatchPending}}}
	objs := []runtime.Object{c}
	objs = append(objs, deployment("checkout", 2, labels("app", "checkout"), nil, []rev{{"6f9c", []string{"checkout-6f9c-abcde", "checkout-6f9c-fghij"}}})...)
	// The canary's pods carry the stable's app label too: only ReplicaSet ownership tells them apart.
	objs = append(objs, deployment("checkout-canary", 1, labels("app", "checkout", "track", "canary"), labels(v1alpha1.LabelCanaryName, "checkout"),
		[]rev{{"5b7d", []string{"checkout-canary-5b7d-klmno"}}})...)
	// Their images and revisions show on the tree.
	setImages(objs, "checkout", "checkout-canary", "nginx:1.26", "4", "nginx:1.27", "1")
	return objs
}

// setImages gives the Deployments of objs, the stable and the canary one, a container named
// container with their images, and their revisions.
func setImages(objs []runtime.Object, container, canary, stableImage, stableRev, canaryImage, canaryRev string) {
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			image, rev := stableImage, stableRev
			if d.Name == canary {
				image, rev = canaryImage, canaryRev
			}
			d.Spec.Template.Spec.Containers = []corev1.Container{{Name: container, Image: image}}
			d.Annotations = map[string]string{"deployment.kubernetes.io/revision": rev}
		}
	}
}

// tappCanary releases TApp web in place: step 1 of 2 bakes with 1 instance on the new revision.
func tappCanary() *v1alpha1.Canary {
	c := &v1alpha1.Canary{ObjectMeta: meta("games", "uid-canary-games", time.Hour, nil, nil, schema{})}
	c.Spec.Replicas = 5
	c.Spec.Batches = ptr.To[int32](2)
	c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "TApp", Name: "web"}
	c.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryProgressing, CurrentBatch: 1,
		CanaryReplicas: 1, CanaryAvailable: 1, StableReplicas: 4, StableAvailable: 2,
		Batches: []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 1, State: v1alpha1.BatchBaking, StartTime: ptr.To(metav1.NewTime(t0.Add(-5 * time.Minute)))},
			{Index: 2, CanaryReplicas: 5, State: v1alpha1.BatchPending}},
		Target: &v1alpha1.CanaryTargetStatus{StableRevision: "web-6b5d", UpdateRevision: "web-84f1", Partition: 4, UpdatedReplicas: 1, AvailableReplicas: 3}}
	return c
}

func stsObjects() []runtime.Object {
	s := &appsv1.StatefulSet{ObjectMeta: meta("db", "uid-db", 72*time.Hour, nil, nil, schema{})}
	s.Spec.Replicas = ptr.To[int32](3)
	s.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels("app", "db")}
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "db-6b5d", UpdateRevision: "db-84f1"}
	objs := []runtime.Object{s}
	for i, r := range []string{"db-6b5d", "db-6b5d", "db-84f1"} {
		objs = append(objs, pod("db-"+string(rune('0'+i)), labels("app", "db", appsv1.ControllerRevisionHashLabelKey, r), s, stsKind, 70*time.Hour, "ready", 0))
	}
	return objs
}

// dsTargetObjects is Canary agents releasing DaemonSet agents in place: step 1 of 2, one of its
// three pods on the new revision.
func dsTargetObjects() []runtime.Object {
	d := &appsv1.DaemonSet{ObjectMeta: meta("agents", "uid-agents", 72*time.Hour, nil, nil, schema{})}
	d.Annotations = map[string]string{v1alpha1.AnnotationDaemonSetPartition: "2"}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels("app", "agents")}
	d.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	d.Status = appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3, UpdatedNumberScheduled: 1}
	c := &v1alpha1.Canary{ObjectMeta: meta("agents", "uid-canary-agents", 2*time.Hour, nil, nil, schema{})}
	c.Spec.Replicas = 3
	c.Spec.Batches = ptr.To[int32](2)
	c.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "DaemonSet", Name: "agents"}
	c.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryPaused, CurrentBatch: 1,
		CanaryReplicas: 1, CanaryAvailable: 1, StableReplicas: 2, StableAvailable: 2,
		Target: &v1alpha1.CanaryTargetStatus{StableRevision: "agents-6b5d", UpdateRevision: "agents-84f1", Partition: 2, UpdatedReplicas: 1, AvailableReplicas: 3},
		Batches: []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 1, State: v1alpha1.BatchPaused, StartTime: ptr.To(metav1.NewTime(t0.Add(-30 * time.Minute)))},
			{Index: 2, CanaryReplicas: 3, State: v1alpha1.BatchPending}}}
	objs := []runtime.Object{c, d}
	for i, h := range []string{"6b5d", "84f1", "6b5d"} {
		objs = append(objs, pod("agents-"+string(rune('a'+i)), labels("app", "agents", appsv1.ControllerRevisionHashLabelKey, h), d, dsKind, time.Hour, "ready", 0))
	}
	return objs
}

// dsObjects is DaemonSet collector rolling from fluentd:1.16 to 1.17 on three nodes: two pods
// updated (one of them crashing), one left; a ControllerRevision another DaemonSet controls
// records the same template.
func dsObjects() []runtime.Object {
	d := &appsv1.DaemonSet{ObjectMeta: meta("collector", "uid-collector", 72*time.Hour, nil, nil, schema{})}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels("app", "collector")}
	d.Spec.Template = historytest.PodTemplate("collector", "fluentd:1.17")
	d.Spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	d.Status = appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, NumberReady: 2, NumberAvailable: 2, UpdatedNumberScheduled: 2}
	objs := []runtime.Object{d,
		historytest.NativeRevision("DaemonSet", "ds", "collector", "uid-other", "collector-9a9a", 3, "fluentd:1.17"),
		historytest.NativeRevision("DaemonSet", "ds", "collector", "uid-collector", "collector-5f6c", 1, "fluentd:1.16"),
		historytest.NativeRevision("DaemonSet", "ds", "collector", "uid-collector", "collector-7d8e", 2, "fluentd:1.17")}
	for i, h := range []string{"5f6c", "7d8e", "7d8e"} {
		state := "ready"
		if i == 2 {
			state = "crash"
		}
		objs = append(objs, pod("collector-"+string(rune('a'+i)), labels("app", "collector", appsv1.ControllerRevisionHashLabelKey, h), d, dsKind, time.Hour, state, int32(i)))
	}
	return objs
}

func TestGet(t *testing.T) {
	all := func(sets ...[]runtime.Object) []runtime.Object {
		var out []runtime.Object
		for _, s := range sets {
			out = append(out, s...)
		}
		return out
	}
	objs := all(tappObjects(), udObjects(), canaryObjects(), stsObjects(), []runtime.Object{tappCanary()}, dsTargetObjects(), dsObjects(),
		deployment("front", 2, labels("app", "front"), nil, []rev{{"aaaa", []string{"front-aaaa-1"}}, {"bbbb", []string{"front-bbbb-1", "front-bbbb-2"}}}))
	tests := []struct {
		name string
		args []string
	}{
		{"tapp-tree", []string{"tapp/web"}},
		{"tapp-tree-full-resource-name", []string{"tapps.apps.workload.dev/web"}},
		{"ud-tree-kind-name", []string{"UnitedDeployment", "orders"}},
		{"ud-tree", []string{"ud/orders"}},
		{"canary-tree", []string{"canary", "checkout"}},
		{"canary-tapp-target-tree", []string{"canary/games"}},
		{"canary-daemonset-target-tree", []string{"canary/agents"}},
		{"deploy-tree", []string{"deploy/front"}},
		{"sts-tree", []string{"sts/db"}},
		{"ds-tree", []string{"ds/collector"}},
		{"tapp-name", []string{"tapp/web", "-o", "name"}},
		{"canary-yaml", []string{"canary/checkout", "-o", "yaml"}},
		{"sts-json", []string{"sts/db", "-o", "json"}},
		{"error-missing", []string{"ud/nope"}},
		{"error-unknown-output", []string{"tapp/web", "-o", "xml"}},
		{"error-watch-with-output", []string{"tapp/web", "-w", "-o", "yaml"}},
		{"error-zero-interval", []string{"tapp/web", "-w", "--interval=0s"}},
		{"error-unknown-type", []string{"pods/web-0"}},
		{"error-not-served-type", []string{"widgets.example.com/web"}},
		{"error-no-args", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdGet, objs, tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
		})
	}
}

// Reads never list every pod of the namespace: every pod list carries a label selector.
func TestGetListsPodsBySelectorOnly(t *testing.T) {
	objs := append(append(append(tappObjects(), udObjects()...), canaryObjects()...), dsObjects()...)
	for _, args := range [][]string{{"tapp/web"}, {"ud/orders"}, {"canary/checkout"}, {"ds/collector"}} {
		res := cmdtest.Run(t, NewCmdGet, objs, args...)
		if res.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args, res.Code, res.Fatal)
		}
		for _, a := range res.Actions {
			if strings.HasPrefix(a, "list ") && !strings.Contains(a, "labels=") {
				t.Errorf("%v: %q lists without a label selector", args, a)
			}
		}
	}
}

func TestEmptySelectorIsRefused(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: meta("open", "uid-open", time.Hour, nil, nil, schema{})}
	d.Spec.Selector = &metav1.LabelSelector{}
	res := cmdtest.Run(t, NewCmdGet, []runtime.Object{d}, "deploy/open")
	if res.Code != 1 || !strings.Contains(res.Fatal, "deploy/open: its selector is empty") {
		t.Errorf("got exit %d %q", res.Code, res.Fatal)
	}
	for _, a := range res.Actions {
		if strings.HasPrefix(a, "list pods") {
			t.Errorf("listed pods with an empty selector: %s", a)
		}
	}
}

// Native objects (pods, ReplicaSets, Deployments, StatefulSets) are read with the typed
// clientset, which speaks protobuf to a real API server; only our custom resources and the
// workload named on the command line go through the dynamic client.
func TestGetReadsNativeObjectsTyped(t *testing.T) {
	objs := append(append(append(tappObjects(), udObjects()...), canaryObjects()...), stsObjects()...)
	for _, args := range [][]string{{"tapp/web"}, {"ud/orders"}, {"canary/checkout"}, {"sts/db"}} {
		res := cmdtest.Run(t, NewCmdGet, objs, args...)
		if res.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args, res.Code, res.Fatal)
		}
		// The first action reads the workload itself (for sts/db, a StatefulSet).
		for _, a := range res.Client.Actions()[1:] {
			if r := a.GetResource().Resource; r == "pods" || r == "replicasets" || r == "deployments" || r == "statefulsets" {
				t.Errorf("%v: %s %s read through the dynamic client", args, a.GetVerb(), r)
			}
		}
		var typed []string
		for _, a := range res.Kube.Actions() {
			typed = append(typed, a.GetVerb()+" "+a.GetResource().Resource)
		}
		if !slices.Contains(typed, "list pods") {
			t.Errorf("%v: the typed clientset did not list pods: %v", args, typed)
		}
	}
}

// analysisCanary is examples/canary-analysis.yaml's release of payments at step 2 of 3: its
// pause runs while three checks measure, one of them with the long values of a pod-health check.
func analysisCanary() []runtime.Object {
	c := &v1alpha1.Canary{ObjectMeta: meta("payments", "uid-canary-payments", time.Hour, nil, nil, schema{})}
	c.Spec.Replicas = 8
	c.Spec.StableRef.Name = "payments"
	c.Spec.Canary.Name = "payments-v2"
	c.Spec.ApprovedBatch = 1
	c.Spec.Steps = []v1alpha1.CanaryStep{
		{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: time.Minute}}, Analysis: []string{"pods-healthy"}},
		{Replicas: intstr.FromString("50%"), Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: 5 * time.Minute}},
			Analysis: []string{"pods-healthy", "error-rate", "smoke-test"}},
	}
	end := metav1.NewTime(t0.Add(3*time.Minute + 20*time.Second))
	health := "{notReady:0,pods:4,ready:4,restarts:0}"
	c.Status = v1alpha1.CanaryStatus{ObservedGeneration: 1, Phase: v1alpha1.CanaryProgressing, CurrentBatch: 2,
		Message:        "step 2/3: 4 of 4 canary pods available, baking; checks pods-healthy, error-rate, smoke-test",
		CanaryReplicas: 4, CanaryAvailable: 4, StableReplicas: 4, StableAvailable: 4,
		Batches: []v1alpha1.CanaryBatchStatus{
			{Index: 1, CanaryReplicas: 1, State: v1alpha1.BatchCompleted, StartTime: ptr.To(metav1.NewTime(t0.Add(-10 * time.Minute)))},
			{Index: 2, CanaryReplicas: 4, State: v1alpha1.BatchBaking, StartTime: ptr.To(metav1.NewTime(t0.Add(-100 * time.Second))), PauseEndTime: &end},
			{Index: 3, CanaryReplicas: 8, State: v1alpha1.BatchPending}},
		Analysis: []v1alpha1.AnalysisCheckStatus{
			{Name: "pods-healthy", Phase: v1alpha1.AnalysisSuccessful, Count: 3, Successful: 3,
				Message: "3 of 3 measurements successful; last: " + health,
				Measurements: []v1alpha1.AnalysisMeasurement{{Phase: v1alpha1.AnalysisSuccessful, Value: health},
					{Phase: v1alpha1.AnalysisSuccessful, Value: health}, {Phase: v1alpha1.AnalysisSuccessful, Value: health}}},
			{Name: "error-rate", Phase: v1alpha1.AnalysisRunning, Count: 2, Successful: 2,
				Measurements: []v1alpha1.AnalysisMeasurement{{Phase: v1alpha1.AnalysisSuccessful, Value: "[0.004]"}, {Phase: v1alpha1.AnalysisSuccessful, Value: "[0.002]"}}},
			{Name: "smoke-test", Phase: v1alpha1.AnalysisRunning}}}
	objs := []runtime.Object{c}
	objs = append(objs, deployment("payments", 4, labels("app", "payments", "track", "stable"), nil,
		[]rev{{"6f9c", []string{"payments-6f9c-abcde", "payments-6f9c-fghij", "payments-6f9c-klmno", "payments-6f9c-pqrst"}}})...)
	objs = append(objs, deployment("payments-v2", 4, labels("app", "payments", "track", "canary"), labels(v1alpha1.LabelCanaryName, "payments"),
		[]rev{{"5b7d", []string{"payments-v2-5b7d-abcde", "payments-v2-5b7d-fghij", "payments-v2-5b7d-klmno", "payments-v2-5b7d-pqrst"}}})...)
	setImages(objs, "payments", "payments-v2", "payments:1.26", "7", "payments:1.27", "1")
	return objs
}

// The tree fits the terminal: a check's line names it, its verdict is the STATUS, its values go to INFO,
// which is cut to the width (80 or 120 columns, from COLUMNS); -o wide prints every line
// whole, and get -w draws the same lines.
func TestGetFitsTheTerminal(t *testing.T) {
	objs := analysisCanary()
	for _, tt := range []struct {
		name  string
		width int
		args  []string
	}{
		{"analysis-tree-80", 80, []string{"canary/payments"}},
		{"analysis-tree-120", 120, []string{"canary/payments"}},
		{"analysis-tree-wide", 80, []string{"canary/payments", "-o", "wide"}},
		{"analysis-tree-no-limit", 0, []string{"canary/payments"}},
		{"analysis-watch-80", 80, []string{"canary/payments", "-w", "--interval=1ms"}},
		{"analysis-watch-wide", 80, []string{"canary/payments", "-w", "-o", "wide", "--interval=1ms"}},
		{"analysis-tree-template-checks", 0, []string{"canary/payments"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs := objs
			if strings.Contains(tt.name, "template") {
				objs = templateChecks(analysisCanary())
			}
			res := cmdtest.RunWidth(t, tt.width, deletedAfterFirstRead(t), objs, tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			for _, l := range strings.Split(strings.TrimSuffix(res.Out, "\n"), "\n") {
				n := utf8.RuneCountInString(l)
				if tt.width > 0 && !slices.Contains(tt.args, "wide") && n > tt.width {
					t.Errorf("%d columns, wider than %d: %s", n, tt.width, l)
				}
				if name := strings.TrimLeft(l, "│├└─ "); strings.HasPrefix(name, "check ") && !strings.Contains(l, "  Running ") && !strings.Contains(l, "  Successful ") {
					t.Errorf("a check line without its verdict: %s", l)
				}
			}
		})
	}
}

// get draws a template: its arguments (which a Canary must give, which have a default), then
// each check with what it measures, how often and what passes it. A ClusterAnalysisTemplate is
// read outside the namespace.
func TestGetTemplate(t *testing.T) {
	objs := cmdtest.AnalysisTemplates(cmdtest.Namespace, t0.Add(-time.Hour))
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"catpl-tree", []string{"catpl/error-rate"}},
		{"atpl-tree", []string{"analysistemplate", "smoke"}},
		{"catpl-yaml", []string{"clusteranalysistemplates.apps.workload.dev/error-rate", "-o", "yaml"}},
		{"error-catpl-missing", []string{"catpl/nope"}},
		{"error-status-of-a-template", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			newCmd := NewCmdGet
			if tt.args == nil {
				newCmd, tt.args = status.NewCmdStatus, []string{"atpl/smoke"}
			}
			res := cmdtest.Run(t, newCmd, objs, tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
		})
	}
}

// templateChecks makes the Canary's error-rate check the two checks of a ClusterAnalysisTemplate
// entry: their lines name the template, the inline checks' lines none.
func templateChecks(objs []runtime.Object) []runtime.Object {
	c := objs[0].(*v1alpha1.Canary)
	c.Status.Analysis = append(c.Status.Analysis[:1],
		v1alpha1.AnalysisCheckStatus{Name: "slo.error-ratio", Template: "ClusterAnalysisTemplate/error-rate", Phase: v1alpha1.AnalysisRunning, Count: 1, Successful: 1,
			Measurements: []v1alpha1.AnalysisMeasurement{{Phase: v1alpha1.AnalysisSuccessful, Value: "[0.004]"}}},
		v1alpha1.AnalysisCheckStatus{Name: "slo.latency-p99", Template: "ClusterAnalysisTemplate/error-rate", Phase: v1alpha1.AnalysisRunning},
		c.Status.Analysis[2])
	return objs
}

// deletedAfterFirstRead is get whose Canary is gone after it was read once: get -w shows the
// tree once, then ends with the error of its next read.
func deletedAfterFirstRead(t *testing.T) cmdtest.NewCmd {
	return func(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
		reads := 0
		f.(*cmdtest.Factory).FakeDynamicClient.PrependReactor("get", "canaries", func(a clienttesting.Action) (bool, runtime.Object, error) {
			reads++
			if reads == 1 {
				return false, nil, nil
			}
			return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), a.(clienttesting.GetAction).GetName())
		})
		return NewCmdGet(f, streams)
	}
}
