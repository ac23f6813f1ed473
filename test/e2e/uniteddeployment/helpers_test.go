package uniteddeployment

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// Subset workload kinds, as the tests name them.
const (
	StatefulSet = "StatefulSet"
	Deployment  = "Deployment"
	TApp        = "TApp"
)

var zones = []string{"zone-a", "zone-b", "zone-c"}

type env struct {
	*e2eenv.Env
	nodeZone map[string]string
}

// setup creates a namespace (deleted after the test) and clients.
func setup(t *testing.T) *env {
	t.Helper()
	e := &env{Env: e2eenv.Setup(t), nodeZone: map[string]string{}}
	for _, n := range e.Cluster.Nodes {
		e.nodeZone[n.Name] = n.Zone
	}
	return e
}

// startAgent runs a workload-agent with the UnitedDeployment and TApp controllers, scoped to the
// test's namespace. When the test ends, it fails if the agent logged an error.
func (e *env) startAgent() *agentproc.Agent {
	e.T.Helper()
	return e.StartAgent("tapp,uniteddeployment")
}

// zoneSubset is a subset pinned to the zone of the same name.
func zoneSubset(zone string) appsv1alpha1.Subset {
	return appsv1alpha1.Subset{Name: zone, NodeSelectorTerm: corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: localcluster.ZoneLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
	}}
}

func podTemplate(name, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "main", Image: image}},
		},
	}
}

// setTemplate makes the UnitedDeployment's subsets the given kind, running image.
func setTemplate(ud *appsv1alpha1.UnitedDeployment, kind, image string) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": ud.Name}}
	ud.Spec.Template = appsv1alpha1.SubsetTemplate{}
	switch kind {
	case StatefulSet:
		ud.Spec.Template.StatefulSetTemplate = &appsv1alpha1.StatefulSetTemplateSpec{Spec: appsv1.StatefulSetSpec{
			Selector: sel, Template: podTemplate(ud.Name, image), ServiceName: ud.Name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
		}}
	case Deployment:
		ud.Spec.Template.DeploymentTemplate = &appsv1alpha1.DeploymentTemplateSpec{Spec: appsv1.DeploymentSpec{
			Selector: sel, Template: podTemplate(ud.Name, image),
		}}
	case TApp:
		ud.Spec.Template.TAppTemplate = &appsv1alpha1.TAppTemplateSpec{Spec: appsv1alpha1.TAppSpec{
			Selector: sel, Template: podTemplate(ud.Name, image),
		}}
	default:
		panic(kind)
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

// newUD returns a UnitedDeployment over zone-a, zone-b and zone-c.
func newUD(name, kind string, replicas int32) *appsv1alpha1.UnitedDeployment {
	ud := &appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	for _, z := range zones {
		ud.Spec.Topology.Subsets = append(ud.Spec.Topology.Subsets, zoneSubset(z))
	}
	setTemplate(ud, kind, "registry.invalid/app:v1")
	return ud
}

func (e *env) create(ud *appsv1alpha1.UnitedDeployment) {
	e.T.Helper()
	e2eenv.Create(e.T, e.Ctx, e.Apps.AppsV1alpha1().UnitedDeployments(e.NS), ud)
}

// update applies mutate to the current UnitedDeployment, retrying on conflicts.
func (e *env) update(name string, mutate func(*appsv1alpha1.UnitedDeployment)) {
	e.T.Helper()
	e2eenv.Update(e.T, e.Ctx, e.Apps.AppsV1alpha1().UnitedDeployments(e.NS), name, mutate)
}

func (e *env) get(name string) *appsv1alpha1.UnitedDeployment {
	e.T.Helper()
	return e2eenv.Get(e.T, e.Ctx, e.Apps.AppsV1alpha1().UnitedDeployments(e.NS), name)
}

// workload is a subset workload of any kind.
type workload struct {
	kind, name, subset, revision string
	replicas                     int32
	deleting                     bool
}

func (w workload) String() string {
	return fmt.Sprintf("%s %s (subset %s, %d replicas, revision %s)", w.kind, w.name, w.subset, w.replicas, w.revision)
}

func toWorkload(kind string, m metav1.Object, replicas *int32) workload {
	return workload{kind: kind, name: m.GetName(), subset: m.GetLabels()[appsv1alpha1.LabelSubsetName],
		revision: m.GetLabels()[appsv1alpha1.LabelRevision], replicas: ptr.Deref(replicas, 1), deleting: m.GetDeletionTimestamp() != nil}
}

// workloads lists the subset workloads of a UnitedDeployment, of every kind.
func (e *env) workloads(name string) []workload {
	e.T.Helper()
	opts := metav1.ListOptions{LabelSelector: appsv1alpha1.LabelUnitedDeploymentName + "=" + name}
	var out []workload
	sets, err := e.Kube.AppsV1().StatefulSets(e.NS).List(e.Ctx, opts)
	if err != nil {
		e.T.Fatal(err)
	}
	for i := range sets.Items {
		out = append(out, toWorkload(StatefulSet, &sets.Items[i], sets.Items[i].Spec.Replicas))
	}
	deps, err := e.Kube.AppsV1().Deployments(e.NS).List(e.Ctx, opts)
	if err != nil {
		e.T.Fatal(err)
	}
	for i := range deps.Items {
		out = append(out, toWorkload(Deployment, &deps.Items[i], deps.Items[i].Spec.Replicas))
	}
	tapps, err := e.Apps.AppsV1alpha1().TApps(e.NS).List(e.Ctx, opts)
	if err != nil {
		e.T.Fatal(err)
	}
	for i := range tapps.Items {
		out = append(out, toWorkload(TApp, &tapps.Items[i], tapps.Items[i].Spec.Replicas))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].subset+out[i].name < out[j].subset+out[j].name })
	return out
}

// pods lists the live (not terminating, not finished) pods of a UnitedDeployment.
func (e *env) pods(name string) []*corev1.Pod {
	e.T.Helper()
	list, err := e.Kube.CoreV1().Pods(e.NS).List(e.Ctx, metav1.ListOptions{LabelSelector: appsv1alpha1.LabelUnitedDeploymentName + "=" + name})
	if err != nil {
		e.T.Fatal(err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		if podLive(&list.Items[i]) {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

func podLive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// podOwnerKind is the kind of the controller of a pod's workload (a Deployment's pods belong to
// a ReplicaSet).
func podOwnerKind(kind string) string {
	if kind == Deployment {
		return "ReplicaSet"
	}
	return kind
}

func total(want map[string]int32) int32 {
	var n int32
	for _, v := range want {
		n += v
	}
	return n
}

// waitSettled waits until the UnitedDeployment is settled with the given subset replicas: its
// status describes its generation and says every replica is updated and ready and the updated
// revision is current, each listed subset has exactly one workload of kind at that revision with
// its replicas, no other workload is left, and each subset's pods are live, ready, on the updated
// revision, run by that workload and scheduled in the subset's zone.
func (e *env) waitSettled(name, kind string, want map[string]int32) *appsv1alpha1.UnitedDeployment {
	e.T.Helper()
	var ud *appsv1alpha1.UnitedDeployment
	e.Eventually(fmt.Sprintf("UnitedDeployment %s settled at %v", name, want), func() (bool, string) {
		ud = e.get(name)
		st := ud.Status
		state := fmt.Sprintf("status gen %d/%d replicas %d ready %d updated %d updatedReady %d revisions %s→%s subsets %+v conditions %s",
			st.ObservedGeneration, ud.Generation, st.Replicas, st.ReadyReplicas, st.UpdatedReplicas, st.UpdatedReadyReplicas,
			st.CurrentRevision, st.UpdatedRevision, st.SubsetStatuses, conditions(st.Conditions))
		n := total(want)
		if st.ObservedGeneration != ud.Generation || st.Replicas != n || st.ReadyReplicas != n || st.UpdatedReplicas != n ||
			st.UpdatedReadyReplicas != n || st.UpdatedRevision == "" || st.CurrentRevision != st.UpdatedRevision {
			return false, state
		}
		if len(st.SubsetStatuses) != len(want) {
			return false, state
		}
		for _, ss := range st.SubsetStatuses {
			if ss.Replicas != want[ss.Name] || ss.ReadyReplicas != want[ss.Name] || ss.UpdatedReplicas != want[ss.Name] {
				return false, state
			}
		}
		for _, c := range []struct {
			t string
			s metav1.ConditionStatus
		}{{appsv1alpha1.SubsetProvisioned, metav1.ConditionTrue}, {appsv1alpha1.SubsetUpdated, metav1.ConditionTrue}, {appsv1alpha1.SubsetFailure, metav1.ConditionFalse}} {
			if !meta.IsStatusConditionPresentAndEqual(st.Conditions, c.t, c.s) {
				return false, state
			}
		}
		ws := e.workloads(name)
		state += fmt.Sprintf("; workloads %v", ws)
		if len(ws) != len(want) {
			return false, state
		}
		for _, w := range ws {
			if w.kind != kind || w.revision != st.UpdatedRevision || w.replicas != want[w.subset] || w.deleting {
				return false, state
			}
		}
		got := map[string]int32{}
		for _, p := range e.pods(name) {
			subset := p.Labels[appsv1alpha1.LabelSubsetName]
			ref := metav1.GetControllerOf(p)
			if !e2eenv.PodReady(p) || p.Labels[appsv1alpha1.LabelRevision] != st.UpdatedRevision || ref == nil || ref.Kind != podOwnerKind(kind) {
				return false, state + fmt.Sprintf("; pod %s not ready or not updated", p.Name)
			}
			if z := e.nodeZone[p.Spec.NodeName]; z != subset {
				e.T.Fatalf("pod %s of subset %s runs on node %q in zone %q", p.Name, subset, p.Spec.NodeName, z)
			}
			got[subset]++
		}
		state += fmt.Sprintf("; pods per subset %v", got)
		for s, n := range want {
			if got[s] != n {
				return false, state
			}
		}
		return len(got) <= len(want), state
	})
	return ud
}

func conditions(cs []metav1.Condition) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(out, " ")
}

// surgeWatcher watches a UnitedDeployment's pods and records a violation the moment a subset
// runs more live pods, for one kind of owner, than it is allowed: its allocation plus what that
// kind may surge (a Deployment's default maxSurge of 25%, rounded up; nothing for StatefulSets
// and TApps, which replace a pod only after the old one is gone). Pods of a previous template
// kind are counted apart, so a kind switch may run both kinds' pods side by side.
type surgeWatcher struct {
	*e2eenv.PodWatcher
	mu      sync.Mutex
	allowed map[string]int32
}

// watchSurge starts a surgeWatcher; it is verified at the end of the test in any case, and a
// test calls verify to check before it goes on.
func (e *env) watchSurge(name string, allowed map[string]int32) *surgeWatcher {
	e.T.Helper()
	sw := &surgeWatcher{allowed: map[string]int32{}}
	sw.allow(allowed)
	sw.PodWatcher = e.WatchPods("surge", appsv1alpha1.LabelUnitedDeploymentName+"="+name, sw.check)
	e.T.Cleanup(func() { sw.verify(e.T) })
	return sw
}

// allow sets the allocation of the given subsets. Before a scale-down, allow the larger of the
// old and new allocations until the UnitedDeployment settled.
func (sw *surgeWatcher) allow(allowed map[string]int32) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for k, v := range allowed {
		sw.allowed[k] = v
	}
}

func (sw *surgeWatcher) check(pods map[types.UID]*corev1.Pod) []string {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var violations []string
	type key struct{ subset, owner string }
	live := map[key][]string{}
	for _, p := range pods {
		if !podLive(p) {
			continue
		}
		owner := ""
		if ref := metav1.GetControllerOf(p); ref != nil {
			owner = ref.Kind
		}
		k := key{p.Labels[appsv1alpha1.LabelSubsetName], owner}
		live[k] = append(live[k], p.Name)
	}
	for k, names := range live {
		allowed, ok := sw.allowed[k.subset]
		if !ok {
			violations = append(violations, fmt.Sprintf("pods %v belong to subset %q, which was never allocated", names, k.subset))
			continue
		}
		surge := int32(0)
		if k.owner == "ReplicaSet" {
			surge = (allowed*25 + 99) / 100
		}
		if int32(len(names)) > allowed+surge {
			sort.Strings(names)
			violations = append(violations, fmt.Sprintf("subset %s runs %d live pods owned by a %s, more than its %d replicas + %d surge: %v",
				k.subset, len(names), k.owner, allowed, surge, names))
		}
	}
	return violations
}

// verify stops the watcher and fails the test with every violation it saw.
func (sw *surgeWatcher) verify(t *testing.T) {
	t.Helper()
	sw.Verify(t)
}
