package uniteddeployment

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/revisiondata"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/revision"
)

// The plan is tested without any client: the kinds have neither listers nor clients, the
// observation is built by hand, and computePlan and planSubsets must not need more.

func clientlessKinds() []workloadKind {
	return []workloadKind{
		subsetKind[*appsv1.StatefulSet]{a: statefulSets{}},
		subsetKind[*appsv1.Deployment]{a: deployments{}},
		subsetKind[*appsv1alpha1.TApp]{a: tapps{}},
	}
}

// world is what a plan test observes.
type world struct {
	ud        *appsv1alpha1.UnitedDeployment
	workloads []metav1.Object
	revisions []*appsv1.ControllerRevision
	pods      []*corev1.Pod
}

// observation files the world's objects as observe would from the caches.
func (w *world) observation() *observation {
	obs := &observation{ud: w.ud, status: &w.ud.Status, own: map[string][]*Subset{}, pods: w.pods}
	for _, k := range clientlessKinds() {
		var list []*Subset
		for _, o := range w.workloads {
			if reflect.TypeOf(o).Elem().Name() == k.Kind() {
				_, replicas, _ := podTemplateOf(o)
				list = append(list, newSubset(o, &replicas))
			}
		}
		obs.add(k, list)
	}
	obs.sortWorkloads()
	obs.revisions = append(obs.revisions, w.revisions...)
	revision.Sort(obs.revisions)
	return obs
}

// workload returns a subset workload of kind made from ud's template as it was at revision rev
// (ud as given, with its template switched to kind), as the controller would have made it.
func (w *world) workload(kind, subset string, replicas int32, rev string, mutate ...func(*appsv1alpha1.UnitedDeployment)) metav1.Object {
	from := w.ud.DeepCopy()
	if !subsetKindOf(kind).Selected(from) {
		setKind(from, kind)
	}
	for _, m := range mutate {
		m(from)
	}
	s := &appsv1alpha1.Subset{Name: subset}
	for i := range from.Spec.Topology.Subsets {
		if from.Spec.Topology.Subsets[i].Name == subset {
			s = &from.Spec.Topology.Subsets[i]
		}
	}
	spec := &SubsetSpec{Subset: s, Replicas: replicas, Revision: rev, SubsetHash: subsetHash(s)}
	obj := subsetKindOf(kind).Build(from, nil, spec)
	n := len(w.workloads)
	obj.SetName(fmt.Sprintf("%s%d", obj.GetGenerateName(), n))
	obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n)))
	obj.SetCreationTimestamp(metav1.NewTime(epoch.Add(time.Duration(n) * time.Second)))
	w.workloads = append(w.workloads, obj)
	return obj
}

func subsetKindOf(kind string) workloadKind {
	for _, k := range clientlessKinds() {
		if k.Kind() == kind {
			return k
		}
	}
	panic(kind)
}

// revision adds the revision ud's template has after mutate, numbered number, and returns its
// name.
func (w *world) revision(number int64, mutate ...func(*appsv1alpha1.UnitedDeployment)) string {
	from := w.ud.DeepCopy()
	for _, m := range mutate {
		m(from)
	}
	data, err := revisiondata.EncodeUnitedDeployment(&from.Spec.Template)
	if err != nil {
		panic(err)
	}
	r := revision.New(from, controllerKind, map[string]string{appsv1alpha1.LabelUnitedDeploymentName: from.Name}, data, number, nil)
	r.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(number) * time.Second))
	w.revisions = append(w.revisions, r)
	return r.Name
}

// readyPods adds n ready pods of a subset at revision rev whose controller is of ownerKind.
func (w *world) readyPods(ownerKind, subset, rev string, n int) {
	for i := 0; i < n; i++ {
		w.pods = append(w.pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", subset, ownerKind, i), Namespace: ns,
				Labels:          map[string]string{appsv1alpha1.LabelUnitedDeploymentName: w.ud.Name, appsv1alpha1.LabelSubsetName: subset, appsv1alpha1.LabelRevision: rev},
				OwnerReferences: []metav1.OwnerReference{{Kind: ownerKind, Name: subset, Controller: ptrTo(true)}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
}

// settledWorld is a UnitedDeployment whose workloads match its spec: 3/3/4 at revision 1.
func settledWorld(kind string) (*world, string) {
	w := &world{ud: threeZones(kind, 10)}
	rev := w.revision(1)
	w.ud.Status.CurrentRevision, w.ud.Status.UpdatedRevision = rev, rev
	for i, r := range []int32{3, 3, 4} {
		w.workload(kind, w.ud.Spec.Topology.Subsets[i].Name, r, rev)
	}
	return w, rev
}

// describePlan lists what computePlan and planSubsets decided, one line per decision.
func describePlan(obs *observation) []string {
	p := computePlan(obs)
	if p.blocked != nil {
		return []string{"blocked " + p.blocked.reason + ": " + p.blocked.message}
	}
	rp := p.revision
	var out []string
	updated := rp.candidate.Name
	switch {
	case rp.equal != nil && rp.latest:
		updated = rp.equal.Name
	case rp.equal != nil:
		updated = rp.equal.Name
		out = append(out, fmt.Sprintf("renumber revision %s to %d", updated, rp.candidate.Revision))
	default:
		out = append(out, fmt.Sprintf("create revision %s #%d", updated, rp.candidate.Revision))
	}
	sp := planSubsets(obs, p.alloc, currentRevision(obs, updated), updated)
	for _, c := range sp.creates {
		out = append(out, "create "+describeWorkload(c.obj))
	}
	for _, u := range sp.updates {
		out = append(out, "update "+describeWorkload(u.obj))
	}
	for _, d := range sp.deletes {
		out = append(out, fmt.Sprintf("delete %s %s: %s", d.kind.Kind(), d.subset.Object.GetName(), d.why))
	}
	for _, reason := range []string{appsv1alpha1.ReasonPaused, appsv1alpha1.ReasonPartitionUnsupported} {
		if s := sp.held[reason]; len(s) > 0 {
			out = append(out, "hold "+reason+" "+strings.Join(s, ","))
		}
	}
	for _, w := range sp.waiting {
		out = append(out, "keep "+w)
	}
	for _, f := range sp.failures {
		out = append(out, "fail "+f.reason+": "+f.message)
	}
	for _, r := range sp.oldRevisions {
		out = append(out, "prune "+r.Name)
	}
	return out
}

// describeWorkload names a planned workload by kind, name (or generateName), subset, replicas,
// partition, pause and the revision its template carries.
func describeWorkload(o metav1.Object) string {
	name := o.GetName()
	if name == "" {
		name = o.GetGenerateName()
	}
	_, replicas, _ := podTemplateOf(o)
	paused := false
	switch w := o.(type) {
	case *appsv1.Deployment:
		paused = w.Spec.Paused
	case *appsv1alpha1.TApp:
		paused = w.Spec.UpdateStrategy.Paused
	}
	s := fmt.Sprintf("%s %s replicas=%d", reflect.TypeOf(o).Elem().Name(), name, replicas)
	if p := partitionOfObject(o.(runtime.Object)); p >= 0 {
		s += fmt.Sprintf(" partition=%d", p)
	}
	if paused {
		s += " paused"
	}
	return s + " revision=" + o.GetLabels()[appsv1alpha1.LabelRevision]
}

func TestPlan(t *testing.T) {
	image2 := func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, "nginx:2") }
	for _, tt := range []struct {
		name  string
		world func() *world
		want  func(w *world) []string
	}{{
		name:  "new: 10 over three subsets is 3/3/4, a revision and one workload per subset",
		world: func() *world { return &world{ud: threeZones("StatefulSet", 10)} },
		want: func(w *world) []string {
			rev := revisionName(t, w.ud)
			return []string{
				"create revision " + rev + " #1",
				"create StatefulSet web-zone-a- replicas=3 partition=0 revision=" + rev,
				"create StatefulSet web-zone-b- replicas=3 partition=0 revision=" + rev,
				"create StatefulSet web-zone-c- replicas=4 partition=0 revision=" + rev,
			}
		},
	}, {
		name:  "settled: nothing to write",
		world: func() *world { w, _ := settledWorld("TApp"); return w },
		want:  func(*world) []string { return nil },
	}, {
		name: "scale up: the remainder goes to the subset holding the most; replicas only",
		world: func() *world {
			w, _ := settledWorld("StatefulSet")
			w.ud.Spec.Replicas = ptrTo[int32](13)
			return w
		},
		want: func(w *world) []string {
			rev := w.ud.Status.UpdatedRevision
			return []string{
				"update StatefulSet web-zone-a-0 replicas=4 partition=0 revision=" + rev,
				"update StatefulSet web-zone-b-1 replicas=4 partition=0 revision=" + rev,
				"update StatefulSet web-zone-c-2 replicas=5 partition=0 revision=" + rev,
			}
		},
	}, {
		name: "scale down: the subsets holding the least lose first; one already right is not written",
		world: func() *world {
			w, _ := settledWorld("Deployment")
			w.ud.Spec.Replicas = ptrTo[int32](8)
			return w
		},
		want: func(w *world) []string {
			rev := w.ud.Status.UpdatedRevision
			return []string{
				"update Deployment web-zone-a-0 replicas=2 revision=" + rev,
				"update Deployment web-zone-c-2 replicas=3 revision=" + rev,
			}
		},
	}, {
		name: "explicit replicas first (50% of 10 rounds to 5), the rest shared",
		world: func() *world {
			w := &world{ud: threeZones("TApp", 10)}
			w.ud.Spec.Topology.Subsets[1].Replicas = ptrTo(intstr.FromString("50%"))
			return w
		},
		want: func(w *world) []string {
			rev := revisionName(t, w.ud)
			return []string{
				"create revision " + rev + " #1",
				"create TApp web-zone-a- replicas=2 partition=0 revision=" + rev,
				"create TApp web-zone-b- replicas=5 partition=0 revision=" + rev,
				"create TApp web-zone-c- replicas=3 partition=0 revision=" + rev,
			}
		},
	}, {
		name: "impossible split: blocked, no revision and no workload write",
		world: func() *world {
			w, _ := settledWorld("StatefulSet")
			image2(w.ud)
			w.ud.Spec.Topology.Subsets[0].Replicas = ptrTo(intstr.FromInt32(11))
			return w
		},
		want: func(*world) []string {
			return []string{"blocked InvalidReplicas: the subsets' explicit replicas add up to 11, more than spec.replicas 10"}
		},
	}, {
		name: "no template kind: blocked",
		world: func() *world {
			w := &world{ud: threeZones("StatefulSet", 10)}
			w.ud.Spec.Template = appsv1alpha1.SubsetTemplate{}
			return w
		},
		want: func(*world) []string {
			return []string{"blocked NoTemplate: spec.template sets none of statefulSetTemplate, deploymentTemplate and tappTemplate"}
		},
	}, {
		name: "new template: a revision numbered next, the template to every subset, partitions capped",
		world: func() *world {
			w, _ := settledWorld("StatefulSet")
			image2(w.ud)
			w.ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-b": 3, "zone-c": 100}}
			return w
		},
		want: func(w *world) []string {
			rev := revisionName(t, w.ud)
			return []string{
				"create revision " + rev + " #2",
				"update StatefulSet web-zone-a-0 replicas=3 partition=0 revision=" + rev,
				"update StatefulSet web-zone-b-1 replicas=3 partition=3 revision=" + rev,
				"update StatefulSet web-zone-c-2 replicas=4 partition=4 revision=" + rev,
			}
		},
	}, {
		name: "template back to an older revision: renumbered, not created",
		world: func() *world {
			w, rev1 := settledWorld("TApp")
			rev2 := w.revision(2, image2)
			w.ud.Status.CurrentRevision, w.ud.Status.UpdatedRevision = rev1, rev2
			return w
		},
		want: func(w *world) []string {
			return []string{"renumber revision " + w.ud.Status.CurrentRevision + " to 3"}
		},
	}, {
		name: "paused: templates held, StatefulSet partitions freeze at the replicas",
		world: func() *world {
			w, _ := settledWorld("StatefulSet")
			image2(w.ud)
			w.ud.Spec.UpdateStrategy.Paused = true
			return w
		},
		want: func(w *world) []string {
			rev1 := w.ud.Status.CurrentRevision
			return []string{
				"create revision " + revisionName(t, w.ud) + " #2",
				"update StatefulSet web-zone-a-0 replicas=3 partition=3 revision=" + rev1,
				"update StatefulSet web-zone-b-1 replicas=3 partition=3 revision=" + rev1,
				"update StatefulSet web-zone-c-2 replicas=4 partition=4 revision=" + rev1,
				"hold Paused zone-a,zone-b,zone-c",
			}
		},
	}, {
		name: "Deployment with a partition: that subset's template held, the failure reported",
		world: func() *world {
			w, _ := settledWorld("Deployment")
			image2(w.ud)
			w.ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-b": 1}}
			return w
		},
		want: func(w *world) []string {
			rev := revisionName(t, w.ud)
			return []string{
				"create revision " + rev + " #2",
				"update Deployment web-zone-a-0 replicas=3 revision=" + rev,
				"update Deployment web-zone-c-2 replicas=4 revision=" + rev,
				"hold PartitionUnsupported zone-b",
				"fail PartitionUnsupported: subset zone-b runs a Deployment, which cannot keep part of its pods on an old revision: partition 1 refused and the subset's template held; set its partition to 0 and use updateStrategy.paused to hold a rollout",
			}
		},
	}, {
		name: "a changed subset topology rewrites that subset's template",
		world: func() *world {
			w, _ := settledWorld("TApp")
			w.ud.Spec.Topology.Subsets[2].Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			return w
		},
		want: func(w *world) []string {
			return []string{"update TApp web-zone-c-2 replicas=4 partition=0 revision=" + w.ud.Status.UpdatedRevision}
		},
	}, {
		name: "duplicates: the oldest is kept; unlisted subsets' workloads go",
		world: func() *world {
			w, rev := settledWorld("StatefulSet")
			w.workload("StatefulSet", "zone-a", 3, rev)
			w.workload("StatefulSet", "zone-z", 3, rev)
			return w
		},
		want: func(*world) []string {
			return []string{
				"delete StatefulSet web-zone-a-3: duplicate of StatefulSet web-zone-a-0 of subset zone-a",
				`delete StatefulSet web-zone-z-4: subset "zone-z" is no longer listed`,
			}
		},
	}, {
		name: "kind switch: the new kind's workloads first, the old ones kept serving",
		world: func() *world {
			w, _ := settledWorld("StatefulSet")
			setKind(w.ud, "TApp")
			return w
		},
		want: func(w *world) []string {
			rev := revisionName(t, w.ud)
			return []string{
				"create revision " + rev + " #2",
				"create TApp web-zone-a- replicas=3 partition=0 revision=" + rev,
				"create TApp web-zone-b- replicas=3 partition=0 revision=" + rev,
				"create TApp web-zone-c- replicas=4 partition=0 revision=" + rev,
				"keep StatefulSet web-zone-a-0 (subset zone-a)",
				"keep StatefulSet web-zone-b-1 (subset zone-b)",
				"keep StatefulSet web-zone-c-2 (subset zone-c)",
			}
		},
	}, {
		name: "kind switch: an old workload goes once its replacement's pods are all ready and updated; an unlisted one at once",
		world: func() *world {
			w, rev1 := settledWorld("StatefulSet")
			w.workload("StatefulSet", "zone-z", 1, rev1)
			setKind(w.ud, "TApp")
			w.ud.Spec.Topology.Subsets = w.ud.Spec.Topology.Subsets[:2]
			w.ud.Spec.Replicas = ptrTo[int32](6)
			rev2 := w.revision(2)
			w.ud.Status.UpdatedRevision = rev2
			w.workload("TApp", "zone-a", 3, rev2)
			w.workload("TApp", "zone-b", 3, rev2)
			w.readyPods("TApp", "zone-a", rev2, 3)
			w.readyPods("TApp", "zone-b", rev2, 2)
			return w
		},
		want: func(*world) []string {
			return []string{
				"delete StatefulSet web-zone-a-0: replaced by TApp web-zone-a-4",
				`delete StatefulSet web-zone-c-2: subset "zone-c" is no longer listed`,
				`delete StatefulSet web-zone-z-3: subset "zone-z" is no longer listed`,
				"keep StatefulSet web-zone-b-1 (subset zone-b)",
			}
		},
	}, {
		name: "history beyond the limit is pruned oldest first, never the current, updated or a carried revision",
		world: func() *world {
			w := &world{ud: threeZones("StatefulSet", 3)}
			w.ud.Spec.RevisionHistoryLimit = ptrTo[int32](0)
			images := func(i int) func(*appsv1alpha1.UnitedDeployment) {
				return func(ud *appsv1alpha1.UnitedDeployment) { setImage(ud, fmt.Sprintf("nginx:%d", i)) }
			}
			rev1 := w.revision(1)
			w.revision(2, images(2))
			rev3 := w.revision(3, images(3))
			w.revision(4, images(4))
			w.ud.Status.CurrentRevision, w.ud.Status.UpdatedRevision = rev1, rev3
			for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
				w.workload("StatefulSet", z, 1, rev3, images(3))
			}
			images(5)(w.ud)
			return w
		},
		want: func(w *world) []string {
			rev5 := revisionName(t, w.ud)
			return []string{
				"create revision " + rev5 + " #5",
				"update StatefulSet web-zone-a-0 replicas=1 partition=0 revision=" + rev5,
				"update StatefulSet web-zone-b-1 replicas=1 partition=0 revision=" + rev5,
				"update StatefulSet web-zone-c-2 replicas=1 partition=0 revision=" + rev5,
				"prune " + w.revisions[1].Name,
				"prune " + w.revisions[3].Name,
			}
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.world()
			got, want := describePlan(w.observation()), tt.want(w)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}
