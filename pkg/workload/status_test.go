package workload

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func toU(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestIDRanges(t *testing.T) {
	for _, tt := range []struct {
		ids  []int
		want string
	}{
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 4, 7, 8, 9}, "0-2, 4, 7-9"},
		{[]int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27}, "1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, … (2 more)"},
	} {
		if got := idRanges(tt.ids); got != tt.want {
			t.Errorf("idRanges(%v) = %q, want %q", tt.ids, got, tt.want)
		}
	}
}

// Without a Progressing condition (an older agent, or none yet at this generation) the counts
// decide, and a status of an older generation never counts as complete.
func TestTAppStatusFromCounts(t *testing.T) {
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2}}
	tapp.Spec.Replicas = ptr.To[int32](3)
	tapp.Status = v1alpha1.TAppStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: 3}
	st, err := RolloutStatusOf(TApp, toU(t, tapp))
	if err != nil || !st.Done() {
		t.Fatalf("got %+v, %v; want complete", st, err)
	}
	tapp.Generation = 3
	if st, _ := RolloutStatusOf(TApp, toU(t, tapp)); st.Done() || !st.Stale {
		t.Errorf("stale status counted as complete: %+v", st)
	}
	tapp.Generation = 2
	tapp.Status.UpdatedReplicas = 2
	if st, _ := RolloutStatusOf(TApp, toU(t, tapp)); st.State != StateProgressing {
		t.Errorf("got %+v, want progressing", st)
	}
	tapp.Spec.UpdateStrategy.Partition = ptr.To[int32](1)
	if st, _ := RolloutStatusOf(TApp, toU(t, tapp)); st.State != StatePaused || !strings.Contains(st.Summary, "partition 1") {
		t.Errorf("got %+v, want held by partition", st)
	}
}

func TestNativeStatus(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "front", Generation: 2}}
	d.Spec.Replicas = ptr.To[int32](2)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if st, err := RolloutStatusOf(Deployment, toU(t, d)); err != nil || !st.Done() {
		t.Errorf("deployment: got %+v, %v; want complete", st, err)
	}
	d.Status.Replicas = 3
	if st, _ := RolloutStatusOf(Deployment, toU(t, d)); st.Done() || !strings.Contains(st.Summary, "1 old replica pending termination") {
		t.Errorf("deployment with an old replica: %+v", st)
	}
	d.Spec.Paused = true
	if st, _ := RolloutStatusOf(Deployment, toU(t, d)); !st.Paused() {
		t.Errorf("paused deployment: %+v", st)
	}

	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 1}}
	s.Spec.Replicas = ptr.To[int32](2)
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-1"}
	if st, _ := RolloutStatusOf(StatefulSet, toU(t, s)); !st.Done() {
		t.Errorf("statefulset: %+v, want complete", st)
	}
	s.Status.UpdateRevision, s.Status.UpdatedReplicas = "db-2", 0
	s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
	if st, _ := RolloutStatusOf(StatefulSet, toU(t, s)); !st.Paused() {
		t.Errorf("OnDelete statefulset with pending update: %+v, want paused", st)
	}
	s.Status.ObservedGeneration = 0
	if st, _ := RolloutStatusOf(StatefulSet, toU(t, s)); !st.Stale || !strings.Contains(st.Summary, "kube-controller-manager") {
		t.Errorf("unobserved statefulset: %+v", st)
	}
}

func TestEveryKindHasAStatusViewer(t *testing.T) {
	for _, k := range Kinds {
		if _, err := StatusViewerFor(k); err != nil {
			t.Errorf("%s: %v", k.Name, err)
		}
	}
}

// A DaemonSet's rollout is kubectl's (every pod updated and available, as of the latest
// generation); OnDelete and a Canary's hold say why pods wait.
func TestDaemonSetStatus(t *testing.T) {
	ds := func(strategy appsv1.DaemonSetUpdateStrategyType, partition string, updated, available int32) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agents", Generation: 3}}
		d.Spec.UpdateStrategy.Type = strategy
		if partition != "" {
			d.Annotations = map[string]string{v1alpha1.AnnotationDaemonSetPartition: partition}
		}
		d.Status = appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 4, NumberReady: available,
			NumberAvailable: available, UpdatedNumberScheduled: updated}
		return d
	}
	const rolling, onDelete = appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType
	for _, tt := range []struct {
		name  string
		ds    *appsv1.DaemonSet
		state RolloutState
		says  string
	}{
		{"complete", ds(rolling, "", 4, 4), StateComplete, "4 of 4 pods updated, 4 ready, 4 available"},
		{"rolling", ds(rolling, "", 2, 3), StateProgressing, "2 of 4 pods updated"},
		{"updated, not yet available", ds(rolling, "", 4, 3), StateProgressing, "4 of 4 pods updated, 3 ready, 3 available"},
		{"OnDelete with old pods", ds(onDelete, "", 1, 4), StatePaused, "pods are updated only when deleted"},
		{"OnDelete, a pod coming back", ds(onDelete, "", 1, 3), StateProgressing, "1 of 4 pods updated"},
		{"OnDelete, all updated", ds(onDelete, "", 4, 4), StateComplete, "4 of 4 pods updated"},
		{"held at its step", ds(onDelete, "3", 1, 4), StatePaused, "held by a Canary (updateStrategy OnDelete), 3 pods kept on the stable revision"},
		{"held, old pods being deleted", ds(onDelete, "2", 1, 4), StateProgressing, "released by a Canary deleting its old pods, 2 pods kept"},
		{"held above its pods", ds(onDelete, "9", 0, 4), StatePaused, "9 pods kept"},
		{"held, all updated", ds(onDelete, "0", 4, 4), StateComplete, "4 of 4 pods updated"},
		{"annotation without OnDelete", ds(rolling, "3", 1, 4), StateProgressing, "1 of 4 pods updated"},
		{"unreadable annotation", ds(onDelete, "x", 1, 4), StatePaused, "pods are updated only when deleted"},
	} {
		st, err := RolloutStatusOf(DaemonSet, toU(t, tt.ds))
		if err != nil || st.State != tt.state || !strings.Contains(st.Summary, tt.says) {
			t.Errorf("%s: got %s %q, %v; want %s with %q", tt.name, st.State, st.Summary, err, tt.state, tt.says)
		}
	}
	stale := ds(rolling, "", 4, 4)
	stale.Generation = 4
	if st, _ := RolloutStatusOf(DaemonSet, toU(t, stale)); !st.Stale || st.Done() || !strings.Contains(st.Summary, "kube-controller-manager") {
		t.Errorf("unobserved daemonset: %+v", st)
	}
}
