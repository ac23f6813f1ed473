package canary

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
)

// zonesCanary releases UnitedDeployment web (zones a, b, c of 2 pods) zone by zone: a with a
// 1m pause, then b; c is named by no step, so a final step of every pod follows.
func zonesCanary() *v1alpha1.Canary {
	return &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Generation: 1, UID: "cn-uid"},
		Spec: v1alpha1.CanarySpec{
			Replicas:  6,
			TargetRef: &v1alpha1.CanaryTargetRef{Kind: kindUnitedDeployment, Name: "web"},
			Steps: []v1alpha1.CanaryStep{
				{Subsets: []string{"a"}, Pause: &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: time.Minute}}},
				{Subsets: []string{"b"}},
			},
		},
	}
}

// zones is UnitedDeployment web with the given partitions (nil for none), updated pods on
// update and the rest on current, every pod ready.
func zones(parts map[string]int32, updated int32, current, update string) *v1alpha1.UnitedDeployment {
	ud := &v1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Generation: 2, UID: "ud-uid"},
		Spec: v1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To[int32](6),
			Template: v1alpha1.SubsetTemplate{StatefulSetTemplate: &v1alpha1.StatefulSetTemplateSpec{}},
			Topology: v1alpha1.Topology{Subsets: []v1alpha1.Subset{{Name: "a"}, {Name: "b"}, {Name: "c"}}},
		},
		Status: v1alpha1.UnitedDeploymentStatus{
			ObservedGeneration: 2, Replicas: 6, ReadyReplicas: 6, UpdatedReplicas: updated,
			CurrentRevision: current, UpdatedRevision: update,
			SubsetStatuses: []v1alpha1.SubsetStatus{{Name: "a", Replicas: 2}, {Name: "b", Replicas: 2}, {Name: "c", Replicas: 2}},
		},
	}
	if parts != nil {
		ud.Spec.UpdateStrategy.ManualUpdate = &v1alpha1.ManualUpdate{Partitions: parts}
	}
	return ud
}

func syncZones(t *testing.T, cn *v1alpha1.Canary, ud *v1alpha1.UnitedDeployment) (*plan, map[string]int32) {
	t.Helper()
	r := computePlan(&observed{canary: cn, target: unitedDeploymentTarget{ud}}, metav1.NewTime(start))
	cn.Status = computeStatus(r, nil)
	var parts map[string]int32
	for _, w := range inPlace(r).writes {
		if w.kind == setPartition {
			parts = unitedDeploymentTarget{ud}.partitions(cn, w.partition, w.step)
		}
	}
	return r, parts
}

func held(a, b, c int32) map[string]int32 { return map[string]int32{"a": a, "b": b, "c": c} }

func samePartitions(got, want map[string]int32) bool {
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	return string(g) == string(w)
}

// The release touches no zone before its step: zone a at step 1, b at step 2, c only at the
// final step the agent adds.
func TestUnitedDeploymentTargetZoneByZone(t *testing.T) {
	cn := zonesCanary()
	if _, p := syncZones(t, cn, zones(nil, 6, "v1", "v1")); !samePartitions(p, held(2, 2, 2)) {
		t.Fatalf("idle: partitions %v, want every zone held", p)
	}
	r, p := syncZones(t, cn, zones(held(2, 2, 2), 0, "v1", "v2"))
	if !samePartitions(p, held(0, 2, 2)) || cn.Status.CurrentBatch != 1 {
		t.Fatalf("step 1: partitions %v batch %d (%s), want zone a released", p, cn.Status.CurrentBatch, r.message)
	}
	if len(cn.Status.Batches) != 3 {
		t.Errorf("%d steps, want 3 (a, b, then the final step of every pod)", len(cn.Status.Batches))
	}
	// Zone a updated: the timed pause bakes, nothing is written.
	r, p = syncZones(t, cn, zones(held(0, 2, 2), 2, "v1", "v2"))
	if p != nil || cn.Status.Batches[0].State != v1alpha1.BatchBaking || r.requeueAfter != time.Minute {
		t.Fatalf("step 1 done: partitions %v state %s requeue %s", p, cn.Status.Batches[0].State, r.requeueAfter)
	}
	cn.Spec.ApprovedBatch = 1
	if _, p = syncZones(t, cn, zones(held(0, 2, 2), 2, "v1", "v2")); !samePartitions(p, held(0, 0, 2)) {
		t.Fatalf("step 2: partitions %v, want zone b released, c held", p)
	}
	if _, p = syncZones(t, cn, zones(held(0, 0, 2), 4, "v1", "v2")); !samePartitions(p, held(0, 0, 0)) {
		t.Fatalf("step 3: partitions %v, want every zone released", p)
	}
	r, p = syncZones(t, cn, zones(held(0, 0, 0), 6, "v2", "v2"))
	if cn.Status.Phase != v1alpha1.CanaryCompleted || !samePartitions(p, held(2, 2, 2)) {
		t.Fatalf("completed: phase %s (%s) partitions %v, want held again", cn.Status.Phase, r.message, p)
	}
}

// Steps of pods fill the zones in topology order, one zone before the next.
func TestUnitedDeploymentTargetPodSteps(t *testing.T) {
	cn := zonesCanary()
	cn.Spec.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1)}, {Replicas: intstr.FromString("50%")}}
	syncZones(t, cn, zones(nil, 6, "v1", "v1"))
	if _, p := syncZones(t, cn, zones(held(2, 2, 2), 0, "v1", "v2")); !samePartitions(p, held(1, 2, 2)) {
		t.Fatalf("step 1: partitions %v, want 1 pod of zone a", p)
	}
	if _, p := syncZones(t, cn, zones(held(1, 2, 2), 1, "v1", "v2")); !samePartitions(p, held(0, 1, 2)) {
		t.Fatalf("step 2: partitions %v, want zone a and 1 pod of b", p)
	}
}

func TestUnitedDeploymentTargetRefusals(t *testing.T) {
	unknown := zonesCanary()
	unknown.Spec.Steps[1].Subsets = []string{"z"}
	deployments := zones(nil, 6, "v1", "v1")
	deployments.Spec.Template = v1alpha1.SubsetTemplate{DeploymentTemplate: &v1alpha1.DeploymentTemplateSpec{}}
	paused := zones(nil, 6, "v1", "v1")
	paused.Spec.UpdateStrategy.Paused = true
	for _, tc := range []struct {
		name   string
		cn     *v1alpha1.Canary
		ud     *v1alpha1.UnitedDeployment
		reason string
		says   string
	}{
		{"unknown subset", unknown, zones(nil, 6, "v1", "v1"), v1alpha1.ReasonInvalidSpec, `steps[1].subsets names "z", which is not a subset of UnitedDeployment "web" (its subsets: a, b, c)`},
		{"Deployment subsets", zonesCanary(), deployments, v1alpha1.ReasonTargetUnsupported, "runs Deployment subsets"},
		{"paused", zonesCanary(), paused, v1alpha1.ReasonTargetUnsupported, "has updateStrategy.paused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, p := syncZones(t, tc.cn, tc.ud)
			if !r.degraded || r.reason != tc.reason || p != nil || !strings.Contains(r.message, tc.says) {
				t.Errorf("degraded %v reason %s partitions %v: %s", r.degraded, r.reason, p, r.message)
			}
		})
	}
}

// The writes: a merge patch of every subset's partition; an abort reads the stable
// ControllerRevision and replaces spec.template with the template it holds.
func TestUnitedDeploymentTargetActions(t *testing.T) {
	ud := zones(held(2, 2, 2), 0, "web-1", "web-2")
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ud, v1alpha1.SchemeGroupVersion.WithKind(kindUnitedDeployment))}},
		Data:     runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"statefulSetTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:v1"}]}}}}}}}`)},
		Revision: 1,
	}
	kube, client := k8sfake.NewClientset(rev), fake.NewSimpleClientset(ud)
	c := &Controller{kubeClient: kube, client: client}
	c.Base = base.New(ControllerName, Kind, record.NewFakeRecorder(10))
	r := &inPlacePlan{decision: &decision{obs: &observed{target: unitedDeploymentTarget{ud}}, canary: zonesCanary()}, target: unitedDeploymentTarget{ud}, writes: []targetWrite{
		{kind: setPartition, partition: 4, step: 1},
		{kind: restoreTemplate, revision: "web-1", reason: "AnalysisFailed"},
	}}
	if f, err := r.execute(context.Background(), c); f != nil || err != nil {
		t.Fatalf("execute: %v %v", f, err)
	}
	var got []string
	for _, a := range append(kube.Actions(), client.Actions()...) {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if p, ok := a.(k8stesting.PatchAction); ok {
			s += " " + string(p.GetPatchType()) + " " + string(p.GetPatch())
		}
		got = append(got, s)
	}
	want := []string{
		"get controllerrevisions",
		`patch uniteddeployments application/merge-patch+json {"spec":{"updateStrategy":{"manualUpdate":{"partitions":{"a":0,"b":2,"c":2}}}}}`,
		`patch uniteddeployments application/json-patch+json [{"op":"replace","path":"/spec/template","value":{"statefulSetTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:v1"}]}}}}}}]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("actions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// clusterZones is zones with each subset in a member cluster fleet/<zone>; the clusters named
// in unreachable report the last counts seen (every pod of a on the update revision, ready).
func clusterZones(parts map[string]int32, updated int32, current, update string, unreachable ...string) *v1alpha1.UnitedDeployment {
	ud := zones(parts, updated, current, update)
	for i := range ud.Spec.Topology.Subsets {
		s := &ud.Spec.Topology.Subsets[i]
		s.ClusterProfileRef = &v1alpha1.ClusterProfileReference{Namespace: "fleet", Name: s.Name}
		st := &ud.Status.SubsetStatuses[i]
		st.ReadyReplicas = 2
		st.Cluster = &v1alpha1.SubsetClusterStatus{ClusterProfile: "fleet/" + s.Name, Reachable: true}
		for _, u := range unreachable {
			if u == s.Name {
				st.Cluster.Reachable, st.Cluster.Message = false, "cluster fleet/"+s.Name+" is unreachable: connection refused"
				st.UpdatedReplicas = 2
			}
		}
	}
	return ud
}

// A wave whose member is unreachable is never counted passed, whatever its last counts say;
// the release says which cluster holds it, and goes on when the member is back.
func TestUnitedDeploymentClusterWaveHeldWhileUnreachable(t *testing.T) {
	cn := zonesCanary()
	syncZones(t, cn, clusterZones(nil, 6, "v1", "v1"))
	if _, p := syncZones(t, cn, clusterZones(held(2, 2, 2), 0, "v1", "v2")); !samePartitions(p, held(0, 2, 2)) {
		t.Fatalf("wave 1: partitions %v, want cluster a released", p)
	}
	r, p := syncZones(t, cn, clusterZones(held(0, 2, 2), 2, "v1", "v2", "a"))
	if p != nil || cn.Status.CurrentBatch != 1 || cn.Status.Batches[0].State == v1alpha1.BatchBaking || cn.Status.Phase != v1alpha1.CanaryProgressing {
		t.Fatalf("wave 1, member a unreachable: partitions %v batch %d state %s phase %s (%s)", p, cn.Status.CurrentBatch, cn.Status.Batches[0].State, cn.Status.Phase, r.message)
	}
	if !strings.Contains(cn.Status.Message, "subset a in cluster fleet/a") {
		t.Fatalf("message %q does not name the unreachable cluster", cn.Status.Message)
	}
	if cn.Status.Abort != nil {
		t.Fatalf("an unreachable member aborted the release: %+v", cn.Status.Abort)
	}
	syncZones(t, cn, clusterZones(held(0, 2, 2), 2, "v1", "v2"))
	if cn.Status.Batches[0].State != v1alpha1.BatchBaking {
		t.Fatalf("member a back: state %s, want wave 1 baking", cn.Status.Batches[0].State)
	}
}

// An unreachable member never aborts a release by itself: only the progress deadline does, and
// with progressDeadlineAbort the release rolls back then.
func TestUnitedDeploymentClusterWaveOnlyDeadlineAborts(t *testing.T) {
	cn := zonesCanary()
	cn.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	cn.Spec.ProgressDeadlineAbort = true
	at := func(d time.Duration, ud *v1alpha1.UnitedDeployment) *plan {
		r := computePlan(&observed{canary: cn, target: unitedDeploymentTarget{ud}}, metav1.NewTime(start.Add(d)))
		cn.Status = computeStatus(r, nil)
		return r
	}
	at(0, clusterZones(nil, 6, "v1", "v1"))
	at(0, clusterZones(held(2, 2, 2), 0, "v1", "v2"))
	if cn.Status.CurrentBatch != 1 {
		t.Fatalf("wave 1 not started: batch %d", cn.Status.CurrentBatch)
	}
	r := at(59*time.Second, clusterZones(held(0, 2, 2), 2, "v1", "v2", "a"))
	if cn.Status.Abort != nil || cn.Status.Phase != v1alpha1.CanaryProgressing {
		t.Fatalf("before the deadline: phase %s abort %+v (%s)", cn.Status.Phase, cn.Status.Abort, r.message)
	}
	r = at(61*time.Second, clusterZones(held(0, 2, 2), 2, "v1", "v2", "a"))
	if a := cn.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonProgressDeadlineExceeded {
		t.Fatalf("after the deadline: phase %s abort %+v (%s), want an abort for the deadline", cn.Status.Phase, a, r.message)
	}
	// The abort writes the stable template back to the UnitedDeployment, whose controller
	// takes it to every member already released (a member unreachable then, when it returns:
	// uniteddeployment's TestMemberPutBackWhenItReturns).
	restored := false
	for range 2 {
		for _, w := range inPlace(r).writes {
			restored = restored || w.kind == restoreTemplate
		}
		if restored {
			break
		}
		r = at(62*time.Second, clusterZones(held(0, 2, 2), 2, "v1", "v2", "a"))
	}
	if !restored {
		t.Fatalf("no template restored after the abort (%s)", r.message)
	}
}

// A release over member clusters aborted at wave 1 says, while it rolls back and once it has,
// which clusters it had released (a) and which it never reached (b, c); a release over zones
// of one cluster says nothing of clusters.
func TestUnitedDeploymentClusterWavesNamedOnRollback(t *testing.T) {
	for _, tt := range []struct {
		name string
		ud   func(parts map[string]int32, updated int32, current, update string) *v1alpha1.UnitedDeployment
		want string
	}{
		{"clusters", func(parts map[string]int32, updated int32, current, update string) *v1alpha1.UnitedDeployment {
			return clusterZones(parts, updated, current, update)
		}, "; released to clusters a (rolled back there); never released: clusters b, c (left as they are)"},
		{"zones", zones, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cn := zonesCanary()
			cn.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
			cn.Spec.ProgressDeadlineAbort = true
			at := func(d time.Duration, ud *v1alpha1.UnitedDeployment) {
				cn.Status = computeStatus(computePlan(&observed{canary: cn, target: unitedDeploymentTarget{ud}}, metav1.NewTime(start.Add(d))), nil)
			}
			at(0, tt.ud(nil, 6, "v1", "v1"))
			at(0, tt.ud(held(2, 2, 2), 0, "v1", "v2"))
			// Wave 1's pods never become ready: the deadline aborts at step 1.
			notReady := func() *v1alpha1.UnitedDeployment {
				ud := tt.ud(held(0, 2, 2), 2, "v1", "v2")
				ud.Status.ReadyReplicas = 4
				return ud
			}
			for _, d := range []time.Duration{61 * time.Second, 62 * time.Second} {
				at(d, notReady())
			}
			if a := cn.Status.Abort; a == nil || a.Step != 1 || cn.Status.Phase != v1alpha1.CanaryRollingBack {
				t.Fatalf("phase %s abort %+v (%s), want rolling back from step 1", cn.Status.Phase, a, cn.Status.Message)
			}
			if !strings.HasSuffix(cn.Status.Message, "writing its template back"+tt.want) {
				t.Errorf("rolling back: message %q, want it to end with %q", cn.Status.Message, tt.want)
			}
			at(63*time.Second, tt.ud(held(2, 2, 2), 6, "v1", "v1"))
			if cn.Status.Phase != v1alpha1.CanaryRolledBack || !strings.HasSuffix(cn.Status.Message, "held at partition 6"+tt.want) {
				t.Errorf("rolled back: phase %s message %q, want it to end with %q", cn.Status.Phase, cn.Status.Message, tt.want)
			}
		})
	}
}
