package uniteddeployment

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// TestSubsetKinds checks each kind's accessors through what subsetKind builds from them: a new
// workload, the scale of an existing one, and a template rewrite that keeps what the kind
// cannot change. A new kind adds its row.
func TestSubsetKinds(t *testing.T) {
	for _, tt := range []struct {
		kind, podOwner string
		partitions     bool
		// scale reads replicas, partition (-1: none) and pause from a workload.
		scale func(metav1.Object) (replicas, partition int32, paused bool)
		// setKept changes, on an existing workload, a field the kind keeps across template
		// rewrites; kept reports whether it is still there.
		setKept func(metav1.Object)
		kept    func(metav1.Object) bool
	}{{
		kind: "StatefulSet", podOwner: "StatefulSet", partitions: true,
		scale: func(o metav1.Object) (int32, int32, bool) {
			s := o.(*appsv1.StatefulSet)
			return *s.Spec.Replicas, *s.Spec.UpdateStrategy.RollingUpdate.Partition, false
		},
		setKept: func(o metav1.Object) { o.(*appsv1.StatefulSet).Spec.ServiceName = "kept" },
		kept:    func(o metav1.Object) bool { return o.(*appsv1.StatefulSet).Spec.ServiceName == "kept" },
	}, {
		kind: "Deployment", podOwner: "ReplicaSet", partitions: false,
		scale: func(o metav1.Object) (int32, int32, bool) {
			d := o.(*appsv1.Deployment)
			return *d.Spec.Replicas, -1, d.Spec.Paused
		},
		setKept: func(metav1.Object) {},
		kept:    func(metav1.Object) bool { return true },
	}, {
		kind: "TApp", podOwner: "TApp", partitions: true,
		scale: func(o metav1.Object) (int32, int32, bool) {
			tp := o.(*appsv1alpha1.TApp)
			return *tp.Spec.Replicas, *tp.Spec.UpdateStrategy.Partition, tp.Spec.UpdateStrategy.Paused
		},
		setKept: func(o metav1.Object) {
			o.(*appsv1alpha1.TApp).Spec.Statuses = map[string]appsv1alpha1.InstanceDesiredStatus{"1": appsv1alpha1.InstanceKilled}
		},
		kept: func(o metav1.Object) bool {
			return o.(*appsv1alpha1.TApp).Spec.Statuses["1"] == appsv1alpha1.InstanceKilled
		},
	}} {
		t.Run(tt.kind, func(t *testing.T) {
			k := subsetKindOf(tt.kind)
			ud := threeZones(tt.kind, 10)
			for _, other := range clientlessKinds() {
				if other.Selected(ud) != (other.Kind() == tt.kind) {
					t.Fatalf("%s selected: %v", other.Kind(), other.Selected(ud))
				}
			}
			if k.PodOwnerKind() != tt.podOwner || k.Partitions() != tt.partitions {
				t.Fatalf("pod owner %s, partitions %v", k.PodOwnerKind(), k.Partitions())
			}
			s := &ud.Spec.Topology.Subsets[0]
			spec := &SubsetSpec{Subset: s, Replicas: 3, Partition: 1, Revision: "r1", SubsetHash: subsetHash(s)}

			// A new workload: named from generateName, owned, labelled, its pods selected and
			// placed by subset.
			obj := k.Build(ud, nil, spec)
			if obj.GetGenerateName() != "web-zone-a-" || !metav1.IsControlledBy(obj, ud) ||
				obj.GetLabels()[appsv1alpha1.LabelRevision] != "r1" || obj.GetLabels()["team"] != "a" ||
				obj.GetAnnotations()[appsv1alpha1.AnnotationSubsetHash] != spec.SubsetHash {
				t.Fatalf("metadata %+v", obj)
			}
			tmpl, _, _ := podTemplateOf(obj)
			if tmpl.Labels[appsv1alpha1.LabelSubsetName] != "zone-a" || tmpl.Labels[appsv1alpha1.LabelRevision] != "r1" ||
				!reflect.DeepEqual(tmpl.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, []corev1.NodeSelectorTerm{s.NodeSelectorTerm}) {
				t.Fatalf("pod template %+v", tmpl)
			}
			if r, p, paused := tt.scale(obj); r != 3 || (tt.partitions && p != 1) || paused {
				t.Fatalf("scale %d/%d/%v", r, p, paused)
			}

			// Paused: each kind's own means (a StatefulSet's partition at its replicas).
			paused := *spec
			paused.Paused = true
			if r, p, isPaused := tt.scale(k.Build(ud, nil, &paused)); r != 3 || (tt.kind == "StatefulSet" && p != 3) || (tt.kind != "StatefulSet" && !isPaused) {
				t.Fatalf("paused scale %d/%d/%v", r, p, isPaused)
			}

			// An existing workload: scaled without its template, or rewritten keeping its
			// selector and whatever the kind cannot change.
			obj.SetName("web-zone-a-1")
			selector := func(o metav1.Object) *metav1.LabelSelector {
				return reflect.ValueOf(o).Elem().FieldByName("Spec").FieldByName("Selector").Interface().(*metav1.LabelSelector)
			}
			selector(obj).MatchLabels["old"] = "kept"
			tt.setKept(obj)
			existing := newSubset(obj, ptrTo[int32](3))
			setImage(ud, "nginx:2")
			next := &SubsetSpec{Subset: s, Replicas: 5, Revision: "r2", SubsetHash: spec.SubsetHash}
			scaled := k.Build(ud, existing, next)
			if imageOf(scaled.(runtime.Object)) != "nginx:1" || scaled.GetLabels()[appsv1alpha1.LabelRevision] != "r1" {
				t.Fatalf("scale rewrote the template")
			}
			if r, _, _ := tt.scale(scaled); r != 5 {
				t.Fatalf("replicas %d", r)
			}
			next.ApplyTemplate = true
			rewritten := k.Build(ud, existing, next)
			if imageOf(rewritten.(runtime.Object)) != "nginx:2" || rewritten.GetLabels()[appsv1alpha1.LabelRevision] != "r2" ||
				selector(rewritten).MatchLabels["old"] != "kept" || !tt.kept(rewritten) {
				t.Fatalf("rewrite %+v", rewritten)
			}
			if _, _, p := tt.scale(obj); p || existing.Object.GetLabels()[appsv1alpha1.LabelRevision] != "r1" {
				t.Fatal("the cached workload was changed")
			}
		})
	}
}

// TestMemberWorkloadCounts: a member workload's updated ready pods, from its status alone:
// exact once every pod is updated (a StatefulSet's currentRevision == updateRevision, or all
// replicas updated), else the least they can be; nothing updated while the status describes
// the spec before.
func TestMemberWorkloadCounts(t *testing.T) {
	sts := func(gen, observed int64, replicas, ready, updated int32, current, update string) workloadStatus {
		set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Status: appsv1.StatefulSetStatus{
			ObservedGeneration: observed, Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: updated,
			CurrentRevision: current, UpdateRevision: update}}
		return statefulSets{}.status(set)
	}
	dep := func(gen, observed int64, replicas, ready, updated int32) workloadStatus {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Status: appsv1.DeploymentStatus{
			ObservedGeneration: observed, Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: updated}}
		return deployments{}.status(d)
	}
	tapp := func(replicas, ready, updated int32) workloadStatus {
		return tapps{}.status(&appsv1alpha1.TApp{Status: appsv1alpha1.TAppStatus{Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: updated}})
	}
	for _, tc := range []struct {
		name                  string
		got                   workloadStatus
		updated, updatedReady int32
	}{
		{"StatefulSet rolled out, one pod not ready", sts(2, 2, 4, 3, 4, "r2", "r2"), 4, 3},
		{"StatefulSet scaled up after its rollout", sts(3, 3, 6, 4, 6, "r2", "r2"), 6, 4},
		{"StatefulSet at partition 3: 1 updated, all ready", sts(2, 2, 4, 4, 1, "r1", "r2"), 1, 1},
		{"StatefulSet at partition 3: 1 updated, one pod not ready", sts(2, 2, 4, 3, 1, "r1", "r2"), 1, 0},
		{"StatefulSet at partition 1: 3 updated, 3 ready", sts(2, 2, 4, 3, 3, "r1", "r2"), 3, 2},
		{"StatefulSet spec not observed yet", sts(3, 2, 4, 4, 4, "r1", "r1"), 0, 0},
		{"Deployment rolled out", dep(2, 2, 4, 3, 4), 4, 3},
		{"Deployment mid-rollout with a surge pod", dep(2, 2, 5, 4, 2), 2, 1},
		{"Deployment spec not observed yet", dep(3, 2, 4, 4, 4), 0, 0},
		{"TApp mid-update", tapp(4, 4, 2), 2, 2},
		{"TApp mid-update, one not ready", tapp(4, 3, 2), 2, 1},
	} {
		if tc.got.updated != tc.updated || tc.got.updatedReady != tc.updatedReady {
			t.Errorf("%s: updated %d, updated ready %d; want %d, %d", tc.name, tc.got.updated, tc.got.updatedReady, tc.updated, tc.updatedReady)
		}
	}
}
