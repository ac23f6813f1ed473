package uniteddeployment

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// statefulSets are StatefulSet subsets. The partition is the StatefulSet's own
// spec.updateStrategy.rollingUpdate.partition (ordinals below it keep their revision); paused
// is a partition equal to the replicas, which freezes a rollout in flight.
type statefulSets struct {
	kube   kubeclient.Interface
	listed appslisters.StatefulSetLister
}

func newStatefulSets(c *ctrl.Context) (workloadKind, cache.SharedIndexInformer) {
	inf := c.ManagedInformers.StatefulSets()
	return subsetKind[*appsv1.StatefulSet]{a: statefulSets{c.KubeClient, inf.Lister()}}, inf.Informer()
}

func (statefulSets) kind() string         { return "StatefulSet" }
func (statefulSets) podOwnerKind() string { return "StatefulSet" }
func (statefulSets) partitions() bool     { return true }

func (statefulSets) template(ud *appsv1alpha1.UnitedDeployment) *metav1.ObjectMeta {
	if t := ud.Spec.Template.StatefulSetTemplate; t != nil {
		return &t.ObjectMeta
	}
	return nil
}

func (statefulSets) newObject() *appsv1.StatefulSet          { return &appsv1.StatefulSet{} }
func (statefulSets) replicas(set *appsv1.StatefulSet) *int32 { return set.Spec.Replicas }

// setTemplate keeps, on an existing StatefulSet, the fields it cannot change (selector,
// volumeClaimTemplates, serviceName, podManagementPolicy).
func (statefulSets) setTemplate(set *appsv1.StatefulSet, ud *appsv1alpha1.UnitedDeployment, selector *metav1.LabelSelector, create bool) {
	old := set.Spec
	set.Spec = *ud.Spec.Template.StatefulSetTemplate.Spec.DeepCopy()
	set.Spec.Selector = selector
	if !create {
		set.Spec.Selector = old.Selector
		set.Spec.VolumeClaimTemplates = old.VolumeClaimTemplates
		set.Spec.ServiceName = old.ServiceName
		set.Spec.PodManagementPolicy = old.PodManagementPolicy
	}
}

func (statefulSets) podTemplates(set *appsv1.StatefulSet, each func(*corev1.PodTemplateSpec)) {
	each(&set.Spec.Template)
}

// setScale writes replicas and the partition (the replicas when paused). A template asking for
// OnDelete gets no partition: its pods change only when deleted.
func (statefulSets) setScale(set *appsv1.StatefulSet, _ *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) {
	replicas := spec.Replicas
	set.Spec.Replicas = &replicas
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return
	}
	set.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	partition := spec.Partition
	if spec.Paused {
		partition = spec.Replicas
	}
	if set.Spec.UpdateStrategy.RollingUpdate == nil {
		set.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
	}
	set.Spec.UpdateStrategy.RollingUpdate.Partition = &partition
}

func (k statefulSets) lister(namespace string) namespaceLister[*appsv1.StatefulSet] {
	return k.listed.StatefulSets(namespace)
}

func (k statefulSets) client(namespace string) typedClient[*appsv1.StatefulSet] {
	return k.kube.AppsV1().StatefulSets(namespace)
}

func (statefulSets) status(obj *appsv1.StatefulSet) workloadStatus {
	st := obj.Status
	// The controller moves currentRevision to updateRevision once every pod runs it; pods
	// added since are made at updateRevision.
	return workloadCounts(st.Replicas, st.ReadyReplicas, st.UpdatedReplicas,
		st.UpdateRevision != "" && st.CurrentRevision == st.UpdateRevision, st.ObservedGeneration >= obj.Generation)
}
