package uniteddeployment

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	core "k8s.io/client-go/testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
)

const zoneKey = "topology.kubernetes.io/zone"

func zone(name string) appsv1alpha1.Subset {
	return appsv1alpha1.Subset{Name: name, NodeSelectorTerm: corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: zoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{name}}},
	}}
}

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// newUD returns a UnitedDeployment "web" whose subsets run the given kind.
func newUD(kind string, replicas int32, subsets ...appsv1alpha1.Subset) *appsv1alpha1.UnitedDeployment {
	ud := &appsv1alpha1.UnitedDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1alpha1.SchemeGroupVersion.String(), Kind: "UnitedDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "ud-uid", Generation: 1, CreationTimestamp: epoch},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Topology: appsv1alpha1.Topology{Subsets: subsets},
		},
	}
	setKind(ud, kind)
	return ud
}

// setKind sets the template to the given kind, with image nginx:1.
func setKind(ud *appsv1alpha1.UnitedDeployment, kind string) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	meta := metav1.ObjectMeta{Labels: map[string]string{"team": "a"}}
	ud.Spec.Template = appsv1alpha1.SubsetTemplate{}
	switch kind {
	case "StatefulSet":
		ud.Spec.Template.StatefulSetTemplate = &appsv1alpha1.StatefulSetTemplateSpec{ObjectMeta: meta,
			Spec: appsv1.StatefulSetSpec{Selector: sel, Template: podTemplate("nginx:1"), ServiceName: "web"}}
	case "Deployment":
		ud.Spec.Template.DeploymentTemplate = &appsv1alpha1.DeploymentTemplateSpec{ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{Selector: sel, Template: podTemplate("nginx:1")}}
	case "TApp":
		ud.Spec.Template.TAppTemplate = &appsv1alpha1.TAppTemplateSpec{ObjectMeta: meta,
			Spec: appsv1alpha1.TAppSpec{Selector: sel, Template: podTemplate("nginx:1")}}
	}
}

// setImage changes the image of the template, whatever its kind.
func setImage(ud *appsv1alpha1.UnitedDeployment, image string) {
	t := &ud.Spec.Template
	switch {
	case t.StatefulSetTemplate != nil:
		t.StatefulSetTemplate.Spec.Template.Spec.Containers[0].Image = image
	case t.DeploymentTemplate != nil:
		t.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = image
	case t.TAppTemplate != nil:
		t.TAppTemplate.Spec.Template.Spec.Containers[0].Image = image
	}
}

func threeZones(kind string, replicas int32) *appsv1alpha1.UnitedDeployment {
	return newUD(kind, replicas, zone("zone-a"), zone("zone-b"), zone("zone-c"))
}

// revisionName is the name of the revision of ud's current template (no collision).
func revisionName(t *testing.T, ud *appsv1alpha1.UnitedDeployment) string {
	t.Helper()
	data, err := revisiondata.EncodeUnitedDeployment(&ud.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	return revision.Name(ud.Name, revision.Hash(data, nil))
}

func partitionOfObject(o runtime.Object) int32 {
	switch w := o.(type) {
	case *appsv1.StatefulSet:
		return *w.Spec.UpdateStrategy.RollingUpdate.Partition
	case *appsv1alpha1.TApp:
		return *w.Spec.UpdateStrategy.Partition
	}
	return -1
}

func imageOf(o runtime.Object) string {
	tmpl, _, _ := podTemplateOf(o.(metav1.Object))
	return tmpl.Spec.Containers[0].Image
}

func condition(t *testing.T, st *appsv1alpha1.UnitedDeploymentStatus, ct string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, ct)
	if c == nil {
		t.Fatalf("no %s condition in %+v", ct, st.Conditions)
	}
	return *c
}

func wantCondition(t *testing.T, st *appsv1alpha1.UnitedDeploymentStatus, ct string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	c := condition(t, st, ct)
	if c.Status != status || c.Reason != reason {
		t.Fatalf("%s is %s/%s (%s), want %s/%s", ct, c.Status, c.Reason, c.Message, status, reason)
	}
	return c
}

func statusOf(t *testing.T, o runtime.Object) *appsv1alpha1.UnitedDeploymentStatus {
	t.Helper()
	return &o.(*appsv1alpha1.UnitedDeployment).Status
}

func wantSubsetStatuses(t *testing.T, st *appsv1alpha1.UnitedDeploymentStatus, want ...appsv1alpha1.SubsetStatus) {
	t.Helper()
	if !reflect.DeepEqual(st.SubsetStatuses, want) {
		t.Fatalf("subset statuses\n  %+v\nwant\n  %+v", st.SubsetStatuses, want)
	}
}

func wantEvents(t *testing.T, f *fixture, prefixes ...string) {
	t.Helper()
	got := f.events()
	if len(got) != len(prefixes) {
		t.Fatalf("events %q, want %d starting with %q", got, len(prefixes), prefixes)
	}
	for i := range got {
		if !strings.HasPrefix(got[i], prefixes[i]) {
			t.Fatalf("event %d is %q, want prefix %q (all: %q)", i, got[i], prefixes[i], got)
		}
	}
}

func TestCreateSubsets(t *testing.T) {
	ud := threeZones("StatefulSet", 10)
	ud.Spec.Topology.Subsets[1].Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "b", Effect: corev1.TaintEffectNoSchedule}}
	f := newFixture(t, ud)
	rev := revisionName(t, ud)

	f.sync("web")
	f.wantActions(
		"create controllerrevisions "+rev,
		"create statefulsets web-zone-a-",
		"create statefulsets web-zone-b-",
		"create statefulsets web-zone-c-",
		"update uniteddeployments/status web",
	)

	cr := f.written(0).(*appsv1.ControllerRevision)
	data, _ := revisiondata.EncodeUnitedDeployment(&ud.Spec.Template)
	if string(cr.Data.Raw) != string(data) || cr.Revision != 1 || !metav1.IsControlledBy(cr, ud) ||
		cr.Labels[appsv1alpha1.LabelUnitedDeploymentName] != "web" {
		t.Fatalf("revision %+v", cr)
	}

	for i, want := range []struct {
		subset   string
		replicas int32
	}{{"zone-a", 3}, {"zone-b", 3}, {"zone-c", 4}} {
		set := f.written(1 + i).(*appsv1.StatefulSet)
		if *set.Spec.Replicas != want.replicas || partitionOfObject(set) != 0 {
			t.Errorf("%s: replicas %d partition %d, want %d and 0", want.subset, *set.Spec.Replicas, partitionOfObject(set), want.replicas)
		}
		wantLabels := map[string]string{
			"team":                                 "a",
			appsv1alpha1.LabelManagedBy:            appsv1alpha1.ManagedByAgent,
			appsv1alpha1.LabelUnitedDeploymentName: "web",
			appsv1alpha1.LabelSubsetName:           want.subset,
			appsv1alpha1.LabelRevision:             rev,
		}
		if !reflect.DeepEqual(set.Labels, wantLabels) {
			t.Errorf("%s labels %v", want.subset, set.Labels)
		}
		if set.Annotations[appsv1alpha1.AnnotationSubsetHash] != subsetHash(&ud.Spec.Topology.Subsets[i]) {
			t.Errorf("%s annotations %v", want.subset, set.Annotations)
		}
		if ref := metav1.GetControllerOf(set); ref == nil || ref.UID != ud.UID || ref.Kind != "UnitedDeployment" || ref.APIVersion != "apps.workload.dev/v1alpha1" {
			t.Errorf("%s owner %+v", want.subset, set.OwnerReferences)
		}
		wantSel := map[string]string{"app": "web", appsv1alpha1.LabelUnitedDeploymentName: "web", appsv1alpha1.LabelSubsetName: want.subset}
		if !reflect.DeepEqual(set.Spec.Selector.MatchLabels, wantSel) {
			t.Errorf("%s selector %v", want.subset, set.Spec.Selector)
		}
		wantPodLabels := map[string]string{"app": "web", appsv1alpha1.LabelManagedBy: appsv1alpha1.ManagedByAgent,
			appsv1alpha1.LabelUnitedDeploymentName: "web", appsv1alpha1.LabelSubsetName: want.subset, appsv1alpha1.LabelRevision: rev}
		if !reflect.DeepEqual(set.Spec.Template.Labels, wantPodLabels) {
			t.Errorf("%s pod labels %v", want.subset, set.Spec.Template.Labels)
		}
		terms := set.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if !reflect.DeepEqual(terms, []corev1.NodeSelectorTerm{ud.Spec.Topology.Subsets[i].NodeSelectorTerm}) {
			t.Errorf("%s node selector terms %+v", want.subset, terms)
		}
		if !reflect.DeepEqual(set.Spec.Template.Spec.Tolerations, ud.Spec.Topology.Subsets[i].Tolerations) {
			t.Errorf("%s tolerations %+v", want.subset, set.Spec.Template.Spec.Tolerations)
		}
		if set.Spec.ServiceName != "web" || set.Spec.Template.Spec.Containers[0].Image != "nginx:1" {
			t.Errorf("%s spec %+v", want.subset, set.Spec)
		}
	}

	st := statusOf(t, f.written(4))
	if st.ObservedGeneration != 1 || st.CurrentRevision != rev || st.UpdatedRevision != rev || st.CollisionCount != nil ||
		st.LabelSelector != "app=web" || st.Replicas != 0 {
		t.Fatalf("status %+v", st)
	}
	wantSubsetStatuses(t, st,
		appsv1alpha1.SubsetStatus{Name: "zone-a", Replicas: 3},
		appsv1alpha1.SubsetStatus{Name: "zone-b", Replicas: 3},
		appsv1alpha1.SubsetStatus{Name: "zone-c", Replicas: 4})
	wantCondition(t, st, appsv1alpha1.SubsetProvisioned, metav1.ConditionTrue, appsv1alpha1.ReasonProvisioned)
	wantCondition(t, st, appsv1alpha1.SubsetUpdated, metav1.ConditionTrue, appsv1alpha1.ReasonUpdated)
	wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionFalse, appsv1alpha1.ReasonNoFailure)
	wantEvents(t, f, "Normal SuccessfulCreate Created StatefulSet web-zone-a-x", "Normal SuccessfulCreate", "Normal SuccessfulCreate")

	// Until the three StatefulSets are observed, another sync does nothing.
	if f.c.expectations.SatisfiedExpectations(ns + "/web") {
		t.Fatal("expectations satisfied before the creations were observed")
	}
	created := f.writes()
	f.sync("web")
	f.wantActions()

	// Observing them (and the status) settles the UnitedDeployment: no further write.
	f.observeActions(created)
	if !f.c.expectations.SatisfiedExpectations(ns + "/web") {
		t.Fatal("expectations not satisfied after the creations were observed")
	}
	f.sync("web")
	f.wantActions()
}

// settled returns a fixture whose UnitedDeployment has reached a steady state: subset workloads
// created, every pod running and ready, status written.
func settled(t *testing.T, ud *appsv1alpha1.UnitedDeployment, objects ...runtime.Object) *fixture {
	t.Helper()
	f := newFixture(t, append([]runtime.Object{ud}, objects...)...)
	f.settle(ud.Name, 5)
	return f
}

// byName finds a cached workload by its subset.
func (f *fixture) subsetWorkload(gvr schema.GroupVersionResource, subset string) metav1.Object {
	f.t.Helper()
	for _, w := range f.workloads(gvr) {
		if w.GetLabels()[appsv1alpha1.LabelSubsetName] == subset {
			return w
		}
	}
	f.t.Fatalf("no %s for subset %s", gvr.Resource, subset)
	return nil
}

func TestNoOpResyncMakesNoWrite(t *testing.T) {
	for _, kind := range []string{"StatefulSet", "Deployment", "TApp"} {
		t.Run(kind, func(t *testing.T) {
			f := settled(t, threeZones(kind, 10))
			st := f.ud("web").Status
			if st.Replicas != 10 || st.ReadyReplicas != 10 || st.UpdatedReplicas != 10 || st.UpdatedReadyReplicas != 10 {
				t.Fatalf("settled status %+v", st)
			}
			// Defaults the API server adds must not look like changes.
			for _, o := range f.workloads(gvrSts) {
				s := o.(*appsv1.StatefulSet).DeepCopy()
				s.Spec.RevisionHistoryLimit = ptrTo[int32](10)
				s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
				s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
				s.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
				s.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
				s.Status = appsv1.StatefulSetStatus{Replicas: *s.Spec.Replicas, ReadyReplicas: *s.Spec.Replicas}
				f.put(s)
			}
			for _, o := range f.workloads(gvrDep) {
				d := o.(*appsv1.Deployment).DeepCopy()
				d.Spec.RevisionHistoryLimit = ptrTo[int32](10)
				d.Spec.ProgressDeadlineSeconds = ptrTo[int32](600)
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
				d.Spec.Template.Spec.SchedulerName = "default-scheduler"
				f.put(d)
			}
			for i := 0; i < 3; i++ {
				f.sync("web")
				f.wantActions()
			}
			wantEvents(t, f)
		})
	}
}

func TestScale(t *testing.T) {
	f := settled(t, threeZones("StatefulSet", 10))
	before := map[string]*appsv1.StatefulSet{}
	for _, s := range []string{"zone-a", "zone-b", "zone-c"} {
		before[s] = f.subsetWorkload(gvrSts, s).(*appsv1.StatefulSet)
	}

	// 3/3/4 to 13: the remainder goes to zone-c, which holds the most.
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = ptrTo[int32](13) })
	f.sync("web")
	f.wantActions(
		"update statefulsets "+before["zone-a"].Name,
		"update statefulsets "+before["zone-b"].Name,
		"update statefulsets "+before["zone-c"].Name,
		"update uniteddeployments/status web",
	)
	for i, want := range []struct {
		subset   string
		replicas int32
	}{{"zone-a", 4}, {"zone-b", 4}, {"zone-c", 5}} {
		got := f.written(i).(*appsv1.StatefulSet)
		// Only the replicas change.
		exp := before[want.subset].DeepCopy()
		exp.Spec.Replicas = &want.replicas
		if !apiequality.Semantic.DeepEqual(got.Spec, exp.Spec) || !apiequality.Semantic.DeepEqual(got.Labels, exp.Labels) ||
			!apiequality.Semantic.DeepEqual(got.Annotations, exp.Annotations) {
			t.Errorf("%s: update is not just replicas %d: %+v", want.subset, want.replicas, got.Spec)
		}
	}
	st := statusOf(t, f.written(3))
	if st.ObservedGeneration != 2 {
		t.Fatalf("observedGeneration %d", st.ObservedGeneration)
	}
	wantSubsetStatuses(t, st,
		appsv1alpha1.SubsetStatus{Name: "zone-a", Replicas: 4, ReadyReplicas: 3, UpdatedReplicas: 3},
		appsv1alpha1.SubsetStatus{Name: "zone-b", Replicas: 4, ReadyReplicas: 3, UpdatedReplicas: 3},
		appsv1alpha1.SubsetStatus{Name: "zone-c", Replicas: 5, ReadyReplicas: 4, UpdatedReplicas: 4})
	wantEvents(t, f, "Normal SuccessfulUpdate Updated StatefulSet web-zone-a-x0001 of subset zone-a: 4 replicas, partition 0",
		"Normal SuccessfulUpdate", "Normal SuccessfulUpdate")

	// Scaling down from 4/4/5 to 8: the subsets holding the least lose first (4/4/5 → 2/3/3).
	f.observe()
	f.settle("web", 3)
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = ptrTo[int32](8) })
	f.sync("web")
	f.wantActions(
		"update statefulsets "+before["zone-a"].Name,
		"update statefulsets "+before["zone-b"].Name,
		"update statefulsets "+before["zone-c"].Name,
		"update uniteddeployments/status web",
	)
	for i, want := range []int32{2, 3, 3} {
		if got := *f.written(i).(*appsv1.StatefulSet).Spec.Replicas; got != want {
			t.Errorf("write %d: replicas %d, want %d", i, got, want)
		}
	}
}

func TestImageChangeWithPartitions(t *testing.T) {
	f := settled(t, threeZones("StatefulSet", 10))
	rev1 := f.ud("web").Status.CurrentRevision
	names := map[string]string{}
	for _, s := range []string{"zone-a", "zone-b", "zone-c"} {
		names[s] = f.subsetWorkload(gvrSts, s).GetName()
	}

	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		setImage(ud, "nginx:2")
		ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-a": 0, "zone-b": 3, "zone-c": 100}}
	})
	rev2 := revisionName(t, f.ud("web"))
	f.sync("web")
	f.wantActions(
		"create controllerrevisions "+rev2,
		"update statefulsets "+names["zone-a"],
		"update statefulsets "+names["zone-b"],
		"update statefulsets "+names["zone-c"],
		"update uniteddeployments/status web",
	)
	if r := f.written(0).(*appsv1.ControllerRevision); r.Revision != 2 {
		t.Fatalf("revision number %d", r.Revision)
	}
	for i, want := range []int32{0, 3, 4} { // zone-c's 100 is capped at its 4 replicas
		set := f.written(1 + i).(*appsv1.StatefulSet)
		if partitionOfObject(set) != want || imageOf(set) != "nginx:2" ||
			set.Labels[appsv1alpha1.LabelRevision] != rev2 || set.Spec.Template.Labels[appsv1alpha1.LabelRevision] != rev2 {
			t.Errorf("write %d: partition %d image %s labels %v", 1+i, partitionOfObject(set), imageOf(set), set.Labels)
		}
	}
	st := statusOf(t, f.written(4))
	if st.UpdatedRevision != rev2 || st.CurrentRevision != rev1 || st.UpdatedReplicas != 0 {
		t.Fatalf("status %+v", st)
	}
	wantSubsetStatuses(t, st,
		appsv1alpha1.SubsetStatus{Name: "zone-a", Replicas: 3, ReadyReplicas: 3, Partition: 0},
		appsv1alpha1.SubsetStatus{Name: "zone-b", Replicas: 3, ReadyReplicas: 3, Partition: 3},
		appsv1alpha1.SubsetStatus{Name: "zone-c", Replicas: 4, ReadyReplicas: 4, Partition: 4})
	wantCondition(t, st, appsv1alpha1.SubsetUpdated, metav1.ConditionTrue, appsv1alpha1.ReasonUpdated)
	f.observe()

	// The StatefulSets roll what their partitions allow: all of zone-a, nothing else.
	f.runPods(f.subsetWorkload(gvrSts, "zone-a"))
	f.setPods(f.subsetWorkload(gvrSts, "zone-b"), func(int) bool { return false })
	f.setPods(f.subsetWorkload(gvrSts, "zone-c"), func(int) bool { return false })
	f.sync("web")
	f.wantActions("update uniteddeployments/status web")
	st = statusOf(t, f.written(0))
	if st.UpdatedReplicas != 3 || st.UpdatedReadyReplicas != 3 || st.CurrentRevision != rev1 {
		t.Fatalf("status after zone-a rolled: %+v", st)
	}
	f.observe()
	f.sync("web")
	f.wantActions()

	// Lowering the other partitions to 0 finishes the rollout.
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.UpdateStrategy.ManualUpdate.Partitions = map[string]int32{"zone-a": 0, "zone-b": 0, "zone-c": 0}
	})
	f.sync("web")
	f.wantActions(
		"update statefulsets "+names["zone-b"],
		"update statefulsets "+names["zone-c"],
		"update uniteddeployments/status web",
	)
	for i := 0; i < 2; i++ {
		if p := partitionOfObject(f.written(i)); p != 0 {
			t.Fatalf("write %d: partition %d", i, p)
		}
	}
	f.observe()
	f.events()
	f.runPods(f.subsetWorkload(gvrSts, "zone-b"))
	f.runPods(f.subsetWorkload(gvrSts, "zone-c"))
	f.sync("web")
	f.wantActions("update uniteddeployments/status web")
	st = statusOf(t, f.written(0))
	if st.CurrentRevision != rev2 || st.UpdatedReadyReplicas != 10 {
		t.Fatalf("status after the rollout: %+v", st)
	}
	wantEvents(t, f, "Normal RolloutComplete")
}

func TestPausedHoldsTemplates(t *testing.T) {
	f := settled(t, threeZones("StatefulSet", 6))
	rev1 := f.ud("web").Status.CurrentRevision
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		setImage(ud, "nginx:2")
		ud.Spec.UpdateStrategy.Paused = true
	})
	rev2 := revisionName(t, f.ud("web"))
	f.sync("web")
	a, b, c := f.subsetWorkload(gvrSts, "zone-a"), f.subsetWorkload(gvrSts, "zone-b"), f.subsetWorkload(gvrSts, "zone-c")
	f.wantActions(
		"create controllerrevisions "+rev2,
		"update statefulsets "+a.GetName(),
		"update statefulsets "+b.GetName(),
		"update statefulsets "+c.GetName(),
		"update uniteddeployments/status web",
	)
	for i := 1; i <= 3; i++ {
		set := f.written(i).(*appsv1.StatefulSet)
		// Paused: the template is held and the partition freezes any rollout in flight.
		if imageOf(set) != "nginx:1" || set.Labels[appsv1alpha1.LabelRevision] != rev1 || partitionOfObject(set) != 2 {
			t.Errorf("write %d: image %s revision %s partition %d", i, imageOf(set), set.Labels[appsv1alpha1.LabelRevision], partitionOfObject(set))
		}
	}
	st := statusOf(t, f.written(4))
	wantCondition(t, st, appsv1alpha1.SubsetUpdated, metav1.ConditionFalse, appsv1alpha1.ReasonPaused)
	if st.CurrentRevision != rev1 || st.UpdatedRevision != rev2 {
		t.Fatalf("status %+v", st)
	}
	f.observe()
	f.sync("web")
	f.wantActions()

	// Resuming applies the template and lifts the partitions.
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.UpdateStrategy.Paused = false })
	f.sync("web")
	for i := 0; i < 3; i++ {
		set := f.written(i).(*appsv1.StatefulSet)
		if imageOf(set) != "nginx:2" || set.Labels[appsv1alpha1.LabelRevision] != rev2 || partitionOfObject(set) != 0 {
			t.Errorf("write %d after resume: image %s partition %d", i, imageOf(set), partitionOfObject(set))
		}
	}
}

func TestDeploymentRefusesPartition(t *testing.T) {
	f := settled(t, threeZones("Deployment", 9))
	rev1 := f.ud("web").Status.CurrentRevision
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		setImage(ud, "nginx:2")
		ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-b": 1}}
	})
	rev2 := revisionName(t, f.ud("web"))
	f.sync("web")
	a, c := f.subsetWorkload(gvrDep, "zone-a"), f.subsetWorkload(gvrDep, "zone-c")
	// zone-b's Deployment is not written at all: its template is held.
	f.wantActions(
		"create controllerrevisions "+rev2,
		"update deployments "+a.GetName(),
		"update deployments "+c.GetName(),
		"update uniteddeployments/status web",
	)
	for i := 1; i <= 2; i++ {
		if d := f.written(i).(*appsv1.Deployment); imageOf(d) != "nginx:2" || d.Spec.Paused {
			t.Errorf("write %d: image %s paused %v", i, imageOf(d), d.Spec.Paused)
		}
	}
	st := statusOf(t, f.written(3))
	c1 := wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionTrue, appsv1alpha1.ReasonPartitionUnsupported)
	if !strings.Contains(c1.Message, "subset zone-b runs a Deployment") || !strings.Contains(c1.Message, "partition 1 refused") {
		t.Fatalf("message %q", c1.Message)
	}
	wantCondition(t, st, appsv1alpha1.SubsetUpdated, metav1.ConditionFalse, appsv1alpha1.ReasonPartitionUnsupported)
	if st.CurrentRevision != rev1 {
		t.Fatalf("current revision %s", st.CurrentRevision)
	}
	wantEvents(t, f, "Normal SuccessfulUpdate", "Normal SuccessfulUpdate", "Warning PartitionUnsupported")

	// The Warning is not repeated while nothing changes.
	f.observe()
	f.sync("web")
	f.wantActions()
	wantEvents(t, f)

	// Pausing is what a Deployment supports: spec.paused on every subset.
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.UpdateStrategy.ManualUpdate = nil
		ud.Spec.UpdateStrategy.Paused = true
	})
	f.sync("web")
	b := f.subsetWorkload(gvrDep, "zone-b")
	f.wantActions(
		"update deployments "+a.GetName(),
		"update deployments "+b.GetName(),
		"update deployments "+c.GetName(),
		"update uniteddeployments/status web",
	)
	for i := 0; i < 3; i++ {
		if d := f.written(i).(*appsv1.Deployment); !d.Spec.Paused {
			t.Errorf("write %d not paused", i)
		}
	}
	if d := f.written(1).(*appsv1.Deployment); imageOf(d) != "nginx:1" {
		t.Errorf("paused zone-b got the new template")
	}
	wantCondition(t, statusOf(t, f.written(3)), appsv1alpha1.SubsetFailure, metav1.ConditionFalse, appsv1alpha1.ReasonNoFailure)
}

func TestTAppSubsetsTakePartitions(t *testing.T) {
	f := settled(t, threeZones("TApp", 10))
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		setImage(ud, "nginx:2")
		ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-b": 2, "zone-c": 9}}
	})
	rev2 := revisionName(t, f.ud("web"))
	f.sync("web")
	a, b, c := f.subsetWorkload(gvrTApp, "zone-a"), f.subsetWorkload(gvrTApp, "zone-b"), f.subsetWorkload(gvrTApp, "zone-c")
	f.wantActions(
		"create controllerrevisions "+rev2,
		"update tapps "+a.GetName(),
		"update tapps "+b.GetName(),
		"update tapps "+c.GetName(),
		"update uniteddeployments/status web",
	)
	for i, want := range []int32{0, 2, 4} {
		tp := f.written(1 + i).(*appsv1alpha1.TApp)
		if partitionOfObject(tp) != want || imageOf(tp) != "nginx:2" || tp.Spec.Template.Labels[appsv1alpha1.LabelRevision] != rev2 {
			t.Errorf("write %d: partition %d image %s", 1+i, partitionOfObject(tp), imageOf(tp))
		}
	}
}

func TestSubsetRemovalDeletesItsWorkload(t *testing.T) {
	f := settled(t, threeZones("StatefulSet", 10))
	a, b, c := f.subsetWorkload(gvrSts, "zone-a"), f.subsetWorkload(gvrSts, "zone-b"), f.subsetWorkload(gvrSts, "zone-c")
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.Topology.Subsets = ud.Spec.Topology.Subsets[:2]
	})
	f.sync("web")
	f.wantActions(
		"update statefulsets "+a.GetName(),
		"update statefulsets "+b.GetName(),
		"delete statefulsets "+c.GetName(),
		"update uniteddeployments/status web",
	)
	for i := 0; i < 2; i++ {
		if r := *f.written(i).(*appsv1.StatefulSet).Spec.Replicas; r != 5 {
			t.Errorf("write %d: replicas %d, want 5", i, r)
		}
	}
	del := f.writes()[2].(core.DeleteActionImpl)
	if p := del.DeleteOptions.Preconditions; p == nil || *p.UID != c.GetUID() {
		t.Fatalf("delete is not guarded by the UID: %+v", del.DeleteOptions)
	}
	wantEvents(t, f, "Normal SuccessfulUpdate", "Normal SuccessfulUpdate",
		`Normal SuccessfulDelete Deleted StatefulSet `+c.GetName()+`: subset "zone-c" is no longer listed`)
	if f.c.expectations.SatisfiedExpectations(ns + "/web") {
		t.Fatal("expectations satisfied before the deletion was observed")
	}
	f.observe()
	f.deletePods(c)
	f.sync("web")
	f.wantActions("update uniteddeployments/status web")
	if st := statusOf(t, f.written(0)); st.Replicas != 6 || len(st.SubsetStatuses) != 2 {
		t.Fatalf("status %+v", st)
	}
}

func TestKindSwitchReplacesEveryWorkload(t *testing.T) {
	f := settled(t, threeZones("StatefulSet", 10))
	sets := f.workloads(gvrSts)
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { setKind(ud, "TApp") })
	rev2 := revisionName(t, f.ud("web"))

	// New TApps first; the StatefulSets keep serving until their replacement is ready.
	f.sync("web")
	f.wantActions(
		"create controllerrevisions "+rev2,
		"create tapps web-zone-a-",
		"create tapps web-zone-b-",
		"create tapps web-zone-c-",
		"update uniteddeployments/status web",
	)
	for i, want := range []int32{3, 3, 4} {
		tp := f.written(1 + i).(*appsv1alpha1.TApp)
		if *tp.Spec.Replicas != want || tp.Labels[appsv1alpha1.LabelRevision] != rev2 {
			t.Errorf("tapp %d: replicas %d labels %v", i, *tp.Spec.Replicas, tp.Labels)
		}
	}
	wantCondition(t, statusOf(t, f.written(4)), appsv1alpha1.SubsetProvisioned, metav1.ConditionFalse, appsv1alpha1.ReasonReplacing)
	f.observe()

	// zone-a's TApp is ready: only zone-a's StatefulSet goes.
	f.runPods(f.subsetWorkload(gvrTApp, "zone-a"))
	f.sync("web")
	f.wantActions("delete statefulsets "+sets[0].GetName(), "update uniteddeployments/status web")
	f.observe()
	f.deletePods(sets[0])

	f.runPods(f.subsetWorkload(gvrTApp, "zone-b"))
	f.runPods(f.subsetWorkload(gvrTApp, "zone-c"))
	f.sync("web")
	f.wantActions("delete statefulsets "+sets[1].GetName(), "delete statefulsets "+sets[2].GetName(), "update uniteddeployments/status web")
	st := statusOf(t, f.written(2))
	wantCondition(t, st, appsv1alpha1.SubsetProvisioned, metav1.ConditionTrue, appsv1alpha1.ReasonProvisioned)
	if st.CurrentRevision == rev2 {
		t.Fatal("revision current while StatefulSet pods still run")
	}
	f.observe()
	f.deletePods(sets[1])
	f.deletePods(sets[2])
	f.sync("web")
	f.wantActions("update uniteddeployments/status web")
	if st := statusOf(t, f.written(0)); st.CurrentRevision != rev2 || st.Replicas != 10 {
		t.Fatalf("status %+v", st)
	}
}

func TestDuplicateWorkloadIsDeleted(t *testing.T) {
	f := settled(t, threeZones("StatefulSet", 10))
	a := f.subsetWorkload(gvrSts, "zone-a").(*appsv1.StatefulSet)
	dup := a.DeepCopy()
	dup.Name, dup.UID = "web-zone-a-dup", "uid-dup"
	dup.CreationTimestamp = metav1.NewTime(a.CreationTimestamp.Add(1e9))
	dup.ResourceVersion = ""
	f.put(dup)
	f.sync("web")
	f.wantActions("delete statefulsets web-zone-a-dup")
	wantEvents(t, f, "Normal SuccessfulDelete Deleted StatefulSet web-zone-a-dup: duplicate of StatefulSet "+a.Name+" of subset zone-a")
}

func TestInvalidReplicasChangeNothing(t *testing.T) {
	for _, tt := range []struct {
		name    string
		subsets func([]appsv1alpha1.Subset)
		msg     string
	}{
		{"explicit sum above replicas", func(s []appsv1alpha1.Subset) {
			s[0].Replicas = ptrTo(intstr.FromInt32(8))
			s[1].Replicas = ptrTo(intstr.FromString("30%"))
		}, "add up to 11, more than spec.replicas 10"},
		{"all explicit below replicas", func(s []appsv1alpha1.Subset) {
			s[0].Replicas = ptrTo(intstr.FromInt32(2))
			s[1].Replicas = ptrTo(intstr.FromInt32(2))
			s[2].Replicas = ptrTo(intstr.FromInt32(2))
		}, "add up to 6, less than spec.replicas 10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := settled(t, threeZones("StatefulSet", 10))
			before := f.ud("web").Status
			f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) {
				tt.subsets(ud.Spec.Topology.Subsets)
				setImage(ud, "nginx:2") // not even a revision is made
			})
			f.sync("web")
			f.wantActions("update uniteddeployments/status web")
			st := statusOf(t, f.written(0))
			c := wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionTrue, appsv1alpha1.ReasonInvalidReplicas)
			if !strings.Contains(c.Message, tt.msg) {
				t.Fatalf("message %q, want %q", c.Message, tt.msg)
			}
			if st.UpdatedRevision != before.UpdatedRevision || st.CurrentRevision != before.CurrentRevision || st.ObservedGeneration != 2 {
				t.Fatalf("status %+v", st)
			}
			wantSubsetStatuses(t, st,
				appsv1alpha1.SubsetStatus{Name: "zone-a", Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3},
				appsv1alpha1.SubsetStatus{Name: "zone-b", Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3},
				appsv1alpha1.SubsetStatus{Name: "zone-c", Replicas: 4, ReadyReplicas: 4, UpdatedReplicas: 4})
			wantEvents(t, f, "Warning InvalidReplicas "+c.Message)
			f.observe()
			f.sync("web")
			f.wantActions()
			wantEvents(t, f)
		})
	}
}

func TestRevisionHistory(t *testing.T) {
	ud := threeZones("StatefulSet", 3)
	ud.Spec.RevisionHistoryLimit = ptrTo[int32](0)
	f := settled(t, ud)
	rev1 := f.ud("web").Status.CurrentRevision

	// nginx:2, 3 and 4 while none finishes rolling: rev1 stays current.
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:2") })
	rev2 := revisionName(t, f.ud("web"))
	f.sync("web")
	f.observe()
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:3") })
	rev3 := revisionName(t, f.ud("web"))
	f.sync("web")
	f.observe()
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:4") })
	rev4 := revisionName(t, f.ud("web"))
	f.sync("web")
	// Limit 0: rev2 goes; rev1 is current, rev4 updated and rev3 still on the StatefulSets.
	got := f.actions()
	if got[0] != "create controllerrevisions "+rev4 || got[len(got)-2] != "delete controllerrevisions "+rev2 {
		t.Fatalf("actions %v", got)
	}
	f.observe()
	for _, r := range []string{rev1, rev3, rev4} {
		if _, ok, _ := f.indexers[gvrRev].GetByKey(ns + "/" + r); !ok {
			t.Fatalf("revision %s was deleted", r)
		}
	}

	// Going back to nginx:3 reuses its revision with the next number.
	f.setSpec("web", func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:3") })
	f.sync("web")
	got = f.actions()
	if got[0] != "update controllerrevisions "+rev3 {
		t.Fatalf("actions %v", got)
	}
	if r := f.written(0).(*appsv1.ControllerRevision); r.Revision != 5 {
		t.Fatalf("reused revision numbered %d, want 5", r.Revision)
	}
	st := statusOf(t, f.written(len(got)-1))
	if st.UpdatedRevision != rev3 || st.CurrentRevision != rev1 {
		t.Fatalf("status %+v", st)
	}
}

func TestRevisionNameCollision(t *testing.T) {
	ud := threeZones("StatefulSet", 3)
	rev := revisionName(t, ud)
	// A revision of this UnitedDeployment with the name its template hashes to, but other data.
	taken := revision.New(ud, controllerKind, map[string]string{appsv1alpha1.LabelUnitedDeploymentName: "web"}, []byte(`{"other":1}`), 1, nil)
	taken.Name = rev
	f := newFixture(t, ud, taken)
	f.sync("web")
	got := f.actions()
	cc := int32(1)
	data, _ := revisiondata.EncodeUnitedDeployment(&ud.Spec.Template)
	rev2 := revision.Name("web", revision.Hash(data, &cc))
	if got[0] != "create controllerrevisions "+rev || got[1] != "get controllerrevisions "+rev || got[2] != "create controllerrevisions "+rev2 {
		t.Fatalf("actions %v", got)
	}
	st := statusOf(t, f.written(len(got)-1))
	if st.CollisionCount == nil || *st.CollisionCount != 1 || st.UpdatedRevision != rev2 {
		t.Fatalf("status %+v", st)
	}
}

func TestAPIErrorsAreReportedAndRequeued(t *testing.T) {
	f := newFixture(t, threeZones("StatefulSet", 3))
	f.fail["create statefulsets"] = apierrors.NewForbidden(gvrSts.GroupResource(), "", errors.New("quota"))
	err := f.trySync("web")
	if err == nil || !strings.Contains(err.Error(), "creating StatefulSet of subset zone-a") {
		t.Fatalf("error %v", err)
	}
	w := f.writes()
	st := statusOf(t, w[len(w)-1].(core.UpdateAction).GetObject())
	wantCondition(t, st, appsv1alpha1.SubsetProvisioned, metav1.ConditionFalse, appsv1alpha1.ReasonProvisionFailed)
	wantCondition(t, st, appsv1alpha1.SubsetFailure, metav1.ConditionTrue, appsv1alpha1.ReasonFailedCreate)
	// Failed creations count as observed: the next sync may try again at once.
	if !f.c.expectations.SatisfiedExpectations(ns + "/web") {
		t.Fatal("failed creations left expectations pending")
	}
}

func TestMergeNodeSelectorTerm(t *testing.T) {
	req := func(k string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpExists}
	}
	subset := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("zone")}}
	terms := func(ts ...corev1.NodeSelectorTerm) *corev1.PodSpec {
		return &corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: ts}}}}
	}
	term := func(keys ...string) corev1.NodeSelectorTerm {
		var t corev1.NodeSelectorTerm
		for _, k := range keys {
			t.MatchExpressions = append(t.MatchExpressions, req(k))
		}
		return t
	}
	for _, tt := range []struct {
		name string
		pod  *corev1.PodSpec
		term corev1.NodeSelectorTerm
		want *corev1.PodSpec
	}{
		{"no affinity", &corev1.PodSpec{}, subset, terms(term("zone"))},
		{"affinity without required terms", &corev1.PodSpec{Affinity: &corev1.Affinity{}}, subset, terms(term("zone"))},
		{"ANDed into every existing term", terms(term("ssd"), term("gpu", "big")), subset, terms(term("ssd", "zone"), term("gpu", "big", "zone"))},
		{"empty subset term changes nothing", terms(term("ssd")), corev1.NodeSelectorTerm{}, terms(term("ssd"))},
		{"empty subset term on a pod without affinity", &corev1.PodSpec{}, corev1.NodeSelectorTerm{}, &corev1.PodSpec{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mergeNodeSelectorTerm(tt.pod, tt.term)
			if !apiequality.Semantic.DeepEqual(tt.pod, tt.want) {
				t.Fatalf("got %+v, want %+v", tt.pod.Affinity, tt.want.Affinity)
			}
		})
	}
}

func TestWorkloadEventsResolveOwner(t *testing.T) {
	ud := threeZones("StatefulSet", 3)
	f := newFixture(t, ud)
	key := ns + "/web"
	f.c.expectations.SetExpectations(key, 1, 1)
	owned := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web-zone-a-1", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{*controllerRef(ud)}}}
	stranger := owned.DeepCopy()
	stranger.OwnerReferences[0].UID = "other"

	f.handler.OnAdd(stranger, false)
	if f.c.Queue.Len() != 0 {
		t.Fatal("a workload of another UnitedDeployment (same name, other UID) was enqueued")
	}
	f.handler.OnAdd(owned, false)
	if f.c.Queue.Len() != 1 {
		t.Fatal("the owner was not enqueued")
	}
	f.handler.OnDelete(cacheTombstone(owned))
	if !f.c.expectations.SatisfiedExpectations(key) {
		t.Fatal("creation and deletion (through a tombstone) not observed")
	}
	// Pods are resolved by label.
	f.c.enqueuePodOwner(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{appsv1alpha1.LabelUnitedDeploymentName: "other"}}})
	if f.c.Queue.Len() != 2 {
		t.Fatalf("queue length %d", f.c.Queue.Len())
	}
}
