package uniteddeployment

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

var evenTen = map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 4}

// Ten replicas over three zones are 3/3/4, each pod in its subset's zone, whatever the kind.
func TestZoneSubsetsOfEveryKind(t *testing.T) {
	e := setup(t)
	e.startAgent()
	kinds := map[string]string{"sts": StatefulSet, "deploy": Deployment, "tapp": TApp}
	watchers := map[string]*surgeWatcher{}
	for name, kind := range kinds {
		watchers[name] = e.watchSurge(name, evenTen)
		e.create(newUD(name, kind, 10))
	}
	for name, kind := range kinds {
		ud := e.waitSettled(name, kind, evenTen)
		if ud.Status.LabelSelector != "app="+name {
			t.Errorf("%s: labelSelector %q", name, ud.Status.LabelSelector)
		}
		watchers[name].verify(t)
	}
}

// Explicit subset replicas come first (50% of 10 is 5, then 3); the unspecified subset gets the
// rest.
func TestExplicitSubsetReplicas(t *testing.T) {
	e := setup(t)
	e.startAgent()
	ud := newUD("web", StatefulSet, 10)
	ud.Spec.Topology.Subsets[0].Replicas = ptr.To(intstr.FromString("50%"))
	ud.Spec.Topology.Subsets[1].Replicas = ptr.To(intstr.FromInt32(3))
	want := map[string]int32{"zone-a": 5, "zone-b": 3, "zone-c": 2}
	w := e.watchSurge("web", want)
	e.create(ud)
	e.waitSettled("web", StatefulSet, want)

	// An impossible split is reported and changes nothing.
	e.update("web", func(ud *appsv1alpha1.UnitedDeployment) {
		ud.Spec.Topology.Subsets[1].Replicas = ptr.To(intstr.FromInt32(6))
	})
	e.Eventually("InvalidReplicas reported", func() (bool, string) {
		ud := e.get("web")
		c := findCondition(ud, appsv1alpha1.SubsetFailure)
		return ud.Status.ObservedGeneration == ud.Generation && c != nil && c.Status == metav1.ConditionTrue && c.Reason == "InvalidReplicas",
			conditions(ud.Status.Conditions)
	})
	for _, wl := range e.workloads("web") {
		if wl.replicas != want[wl.subset] {
			t.Errorf("%v changed while the split is invalid", wl)
		}
	}
	w.verify(t)
}

func findCondition(ud *appsv1alpha1.UnitedDeployment, t string) *metav1.Condition {
	for i := range ud.Status.Conditions {
		if ud.Status.Conditions[i].Type == t {
			return &ud.Status.Conditions[i]
		}
	}
	return nil
}

// podsByRevision counts a subset's live pods per revision label.
func (e *env) podsByRevision(name string) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, p := range e.pods(name) {
		s := p.Labels[appsv1alpha1.LabelSubsetName]
		if out[s] == nil {
			out[s] = map[string]int{}
		}
		out[s][p.Labels[appsv1alpha1.LabelRevision]]++
	}
	return out
}

// An image change with partitions {zone-a: 0, zone-b: all, zone-c: all} updates zone-a only;
// lowering the other partitions to 0 finishes the rollout and the updated revision becomes
// current.
func TestPartitionedRollout(t *testing.T) {
	for _, kind := range []string{StatefulSet, TApp} {
		t.Run(kind, func(t *testing.T) {
			e := setup(t)
			e.startAgent()
			w := e.watchSurge("web", evenTen)
			e.create(newUD("web", kind, 10))
			rev1 := e.waitSettled("web", kind, evenTen).Status.CurrentRevision

			e.update("web", func(ud *appsv1alpha1.UnitedDeployment) {
				setImage(ud, "registry.invalid/app:v2")
				ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-a": 0, "zone-b": 3, "zone-c": 1000}}
			})
			var rev2 string
			e.Eventually("zone-a updated, zone-b and zone-c held", func() (bool, string) {
				ud := e.get("web")
				rev2 = ud.Status.UpdatedRevision
				revs := e.podsByRevision("web")
				state := fmt.Sprintf("revisions %s→%s pods %v subsets %+v", ud.Status.CurrentRevision, rev2, revs, ud.Status.SubsetStatuses)
				if ud.Status.ObservedGeneration != ud.Generation || rev2 == rev1 || ud.Status.CurrentRevision != rev1 {
					return false, state
				}
				return revs["zone-a"][rev2] == 3 && revs["zone-b"][rev1] == 3 && revs["zone-c"][rev1] == 4 &&
					ud.Status.UpdatedReadyReplicas == 3, state
			})
			ud := e.get("web")
			for _, ss := range ud.Status.SubsetStatuses {
				if want := map[string]int32{"zone-a": 0, "zone-b": 3, "zone-c": 4}[ss.Name]; ss.Partition != want {
					t.Errorf("subset %s partition %d, want %d (capped)", ss.Name, ss.Partition, want)
				}
			}
			// Held subsets stay held: nothing of zone-b or zone-c moves.
			if revs := e.podsByRevision("web"); revs["zone-b"][rev2] != 0 || revs["zone-c"][rev2] != 0 {
				t.Fatalf("held subsets updated: %v", revs)
			}

			e.update("web", func(ud *appsv1alpha1.UnitedDeployment) {
				ud.Spec.UpdateStrategy.ManualUpdate.Partitions = map[string]int32{"zone-a": 0, "zone-b": 0, "zone-c": 0}
			})
			ud = e.waitSettled("web", kind, evenTen)
			if ud.Status.CurrentRevision != rev2 {
				t.Fatalf("current revision %s, want %s", ud.Status.CurrentRevision, rev2)
			}
			w.verify(t)
		})
	}
}

// Removing a subset deletes its workload; switching the template from StatefulSet to TApp
// replaces every subset workload.
func TestRemoveSubsetAndSwitchKind(t *testing.T) {
	e := setup(t)
	e.startAgent()
	w := e.watchSurge("web", evenTen)
	e.create(newUD("web", StatefulSet, 10))
	e.waitSettled("web", StatefulSet, evenTen)
	before := e.workloads("web")

	w.allow(map[string]int32{"zone-a": 5, "zone-b": 5})
	e.update("web", func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Topology.Subsets = ud.Spec.Topology.Subsets[:2] })
	fiveFive := map[string]int32{"zone-a": 5, "zone-b": 5}
	e.waitSettled("web", StatefulSet, fiveFive)
	after := e.workloads("web")
	for i := range after {
		if after[i].name != before[i].name {
			t.Fatalf("subset %s's StatefulSet was replaced: %v → %v", after[i].subset, before[i], after[i])
		}
	}

	e.update("web", func(ud *appsv1alpha1.UnitedDeployment) { setTemplate(ud, TApp, "registry.invalid/app:v1") })
	e.waitSettled("web", TApp, fiveFive)
	w.verify(t)
}

// The scale subresource drives spec.replicas and reports status.replicas and the selector.
func TestScaleSubresource(t *testing.T) {
	e := setup(t)
	e.startAgent()
	w := e.watchSurge("web", evenTen)
	e.create(newUD("web", StatefulSet, 10))
	e.waitSettled("web", StatefulSet, evenTen)

	uds := e.Apps.AppsV1alpha1().UnitedDeployments(e.NS)
	sc, err := uds.GetScale(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 10 || sc.Status.Replicas != 10 || sc.Status.Selector != "app=web" {
		t.Fatalf("scale %+v", sc)
	}
	// Up to 13: the remainder goes to zone-c, which holds the most.
	up := map[string]int32{"zone-a": 4, "zone-b": 4, "zone-c": 5}
	w.allow(up)
	sc.Spec.Replicas = 13
	if _, err := uds.UpdateScale(e.Ctx, "web", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitSettled("web", StatefulSet, up)

	// Down to 6.
	sc, err = uds.GetScale(e.Ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 6
	if _, err := uds.UpdateScale(e.Ctx, "web", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	down := map[string]int32{"zone-a": 2, "zone-b": 2, "zone-c": 2}
	e.waitSettled("web", StatefulSet, down)
	w.allow(down)
	if sc, err = uds.GetScale(e.Ctx, "web", metav1.GetOptions{}); err != nil || sc.Status.Replicas != 6 {
		t.Fatalf("scale %+v, %v", sc, err)
	}
	w.verify(t)
}

// The agent killed in the middle of a rollout and started again finishes it, without
// duplicating a subset workload or a pod.
func TestAgentRestartMidRollout(t *testing.T) {
	e := setup(t)
	a := e.startAgent()
	nine := map[string]int32{"zone-a": 3, "zone-b": 3, "zone-c": 3}
	w := e.watchSurge("web", nine)
	e.create(newUD("web", TApp, 9))
	rev1 := e.waitSettled("web", TApp, nine).Status.CurrentRevision
	workloads := e.workloads("web")

	e.update("web", func(ud *appsv1alpha1.UnitedDeployment) {
		setImage(ud, "registry.invalid/app:v2")
		ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"zone-b": 3, "zone-c": 3}}
	})
	// Kill the agent as soon as the rollout has started, while zone-a may still be rolling.
	e.Eventually("rollout started", func() (bool, string) {
		ud := e.get("web")
		return ud.Status.UpdatedRevision != rev1 && ud.Status.ObservedGeneration == ud.Generation, fmt.Sprintf("%+v", ud.Status)
	})
	a.Kill()
	t.Logf("agent killed; pods per revision: %v", e.podsByRevision("web"))

	// While it is down, release the other zones.
	e.update("web", func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.UpdateStrategy.ManualUpdate = nil })
	a = e.startAgent()

	// Kill it once more in the middle of the second part if the rollout is slow enough to catch.
	rev2 := e.get("web").Status.UpdatedRevision
	e.Eventually("second part started", func() (bool, string) {
		revs := e.podsByRevision("web")
		n := revs["zone-b"][rev2] + revs["zone-c"][rev2]
		return n > 0, fmt.Sprintf("%v", revs)
	})
	if revs := e.podsByRevision("web"); revs["zone-b"][rev2]+revs["zone-c"][rev2] < 6 {
		a.Kill()
		t.Logf("agent killed again; pods per revision: %v", revs)
		e.startAgent()
	}

	ud := e.waitSettled("web", TApp, nine)
	if ud.Status.CurrentRevision == rev1 {
		t.Fatal("the updated revision did not become current")
	}
	for i, wl := range e.workloads("web") {
		if wl.name != workloads[i].name {
			t.Errorf("subset %s workload replaced: %v → %v", wl.subset, workloads[i], wl)
		}
	}
	w.verify(t)
}
