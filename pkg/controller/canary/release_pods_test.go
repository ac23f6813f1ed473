package canary

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/tapp"
)

// pod is a ready pod with labels, restarts, and a controller reference to owner ("" for none).
func pod(name string, owner types.UID, restarts int32, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Status: corev1.PodStatus{
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, RestartCount: restarts}},
		},
	}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "ledger", UID: owner, Controller: ptr.To(true)}}
	}
	return p
}

func measurePods(t *testing.T, c *Controller, pods releasePods) map[string]int64 {
	t.Helper()
	p, err := c.podHealth(context.Background(), ns, pods)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.Measure(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]int64)
}

// A StatefulSet target's podHealth measures its pods of the update revision, listed from the
// API server's watch cache with the StatefulSet's selector and the revision label, keeping those
// it controls: not its pods of the stable revision, nor another workload's.
func TestPodHealthOfAStatefulSetTargetMeasuresTheUpdateRevision(t *testing.T) {
	sts := ledger(2, 2, "ledger-v1", "ledger-v2")
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ledger"}}
	rev := func(r string) map[string]string {
		return map[string]string{"app": "ledger", appsv1.ControllerRevisionHashLabelKey: r}
	}
	kube := k8sfake.NewClientset(
		pod("ledger-0", "sts-uid", 9, rev("ledger-v1")),
		pod("ledger-2", "sts-uid", 0, rev("ledger-v2")),
		pod("ledger-3", "sts-uid", 4, rev("ledger-v2")),
		pod("other-3", "other-uid", 7, rev("ledger-v2")),
	)
	c := &Controller{kubeClient: kube}
	pods := podsToMeasure(&observed{target: statefulSetTarget{sts}})
	if pods.cached {
		t.Fatal("a StatefulSet's pods are not the agent's: they cannot be in its cache")
	}
	counts := measurePods(t, c, pods)
	if counts["pods"] != 2 || counts["restarts"] != 4 || counts["totalRestarts"] != 4 {
		t.Errorf("counts %v, want ledger-2 and ledger-3 only (2 pods, 4 restarts)", counts)
	}
	var actions []string
	for _, a := range kube.Actions() {
		l, ok := a.(k8stesting.ListActionImpl)
		if !ok {
			t.Fatalf("unexpected action %s", describe(a))
		}
		actions = append(actions, a.GetVerb()+" "+a.GetResource().Resource+" "+l.GetListRestrictions().Labels.String())
	}
	if want := "list pods app=ledger,controller-revision-hash=ledger-v2"; len(actions) != 1 || actions[0] != want {
		t.Errorf("actions %q, want [%s]", actions, want)
	}
}

// A DaemonSet's are selected by its update revision's hash.
func TestPodHealthOfADaemonSetTargetSelectsItsUpdateHash(t *testing.T) {
	ds := &daemonSetTarget{DaemonSet: &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}}}, update: "5f6d"}
	pods := podsToMeasure(&observed{target: ds})
	if pods.cached || pods.selector.String() != "app=agent,controller-revision-hash=5f6d" {
		t.Errorf("selector %v (cached %v)", pods.selector, pods.cached)
	}
}

// A TApp's instances on spec.template (its template-hash label) and a UnitedDeployment's pods of
// the update revision are the agent's own pods: read from its pod cache.
func TestPodHealthOfTAppAndUnitedDeploymentTargetsReadsTheCache(t *testing.T) {
	ta := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
	ta.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx:1.27"}}
	hash := tapp.TemplateHash(&ta.Spec.Template)
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{
		pod("web-0", "", 5, map[string]string{v1alpha1.LabelTAppName: "web", v1alpha1.LabelTemplateHash: "old"}),
		pod("web-1", "", 2, map[string]string{v1alpha1.LabelTAppName: "web", v1alpha1.LabelTemplateHash: hash}),
	} {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{analysisEnv: analysis.Env{Pods: corelisters.NewPodLister(store)}}
	pods := podsToMeasure(&observed{target: tappTarget{ta}})
	if counts := measurePods(t, c, pods); !pods.cached || counts["pods"] != 1 || counts["restarts"] != 2 {
		t.Errorf("counts %v (cached %v), want web-1 only", counts, pods.cached)
	}

	ud := &v1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: "zones"}}
	ud.Status.UpdatedRevision = "zones-7c9"
	pods = podsToMeasure(&observed{target: unitedDeploymentTarget{ud}})
	if want := v1alpha1.LabelRevision + "=zones-7c9," + v1alpha1.LabelUnitedDeploymentName + "=zones"; !pods.cached || pods.selector.String() != want {
		t.Errorf("selector %v (cached %v), want %s", pods.selector, pods.cached, want)
	}
}

// Without a revision to select by (a target not read yet), podHealth cannot measure: an error
// measurement, never a pass.
func TestPodHealthWithoutARevisionErrs(t *testing.T) {
	sts := ledger(4, 0, "", "")
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ledger"}}
	c := &Controller{kubeClient: k8sfake.NewClientset()}
	if _, err := c.podHealth(context.Background(), ns, podsToMeasure(&observed{target: statefulSetTarget{sts}})); err == nil {
		t.Error("podHealth of a target without an update revision measured")
	}
}
