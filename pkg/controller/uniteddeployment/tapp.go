package uniteddeployment

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

// tapps are TApp subsets. The partition is the TApp's spec.updateStrategy.partition (instance
// ids below it keep their template) and paused is spec.updateStrategy.paused.
type tapps struct {
	ours   versioned.Interface
	listed listers.TAppLister
}

func newTApps(c *ctrl.Context) (workloadKind, cache.SharedIndexInformer) {
	inf := c.Informers.Apps().V1alpha1().TApps()
	return subsetKind[*appsv1alpha1.TApp]{a: tapps{c.Client, inf.Lister()}}, inf.Informer()
}

func (tapps) kind() string         { return "TApp" }
func (tapps) podOwnerKind() string { return "TApp" }
func (tapps) partitions() bool     { return true }

func (tapps) template(ud *appsv1alpha1.UnitedDeployment) *metav1.ObjectMeta {
	if t := ud.Spec.Template.TAppTemplate; t != nil {
		return &t.ObjectMeta
	}
	return nil
}

func (tapps) newObject() *appsv1alpha1.TApp        { return &appsv1alpha1.TApp{} }
func (tapps) replicas(t *appsv1alpha1.TApp) *int32 { return t.Spec.Replicas }

// setTemplate keeps, on an existing TApp, its selector and its per-instance statuses (instances
// killed on the subset TApp stay killed) unless the template sets some.
func (tapps) setTemplate(t *appsv1alpha1.TApp, ud *appsv1alpha1.UnitedDeployment, selector *metav1.LabelSelector, create bool) {
	old := t.Spec
	t.Spec = *ud.Spec.Template.TAppTemplate.Spec.DeepCopy()
	t.Spec.Selector = selector
	if !create {
		t.Spec.Selector = old.Selector
		if len(t.Spec.Statuses) == 0 {
			t.Spec.Statuses = old.Statuses
		}
	}
}

// podTemplates visits spec.template and every templatePool entry.
func (tapps) podTemplates(t *appsv1alpha1.TApp, each func(*corev1.PodTemplateSpec)) {
	each(&t.Spec.Template)
	for name, pt := range t.Spec.TemplatePool {
		each(&pt)
		t.Spec.TemplatePool[name] = pt
	}
}

// setScale writes replicas, partition and paused (the template's own paused also pauses).
func (tapps) setScale(t *appsv1alpha1.TApp, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) {
	replicas := spec.Replicas
	t.Spec.Replicas = &replicas
	partition := spec.Partition
	t.Spec.UpdateStrategy.Partition = &partition
	t.Spec.UpdateStrategy.Paused = spec.Paused || ud.Spec.Template.TAppTemplate.Spec.UpdateStrategy.Paused
}

func (k tapps) lister(namespace string) namespaceLister[*appsv1alpha1.TApp] {
	return k.listed.TApps(namespace)
}

func (k tapps) client(namespace string) typedClient[*appsv1alpha1.TApp] {
	return k.ours.AppsV1alpha1().TApps(namespace)
}

func (tapps) status(obj *appsv1alpha1.TApp) workloadStatus {
	st := obj.Status
	return workloadCounts(st.Replicas, st.ReadyReplicas, st.UpdatedReplicas, false, st.ObservedGeneration >= obj.Generation)
}
