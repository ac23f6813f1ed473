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

// deployments are Deployment subsets. A Deployment cannot keep some of its pods on an old
// template, so it has no partition: the controller refuses a non-zero partition for it (holding
// the subset's template and reporting a condition). Paused is spec.paused.
type deployments struct {
	kube   kubeclient.Interface
	listed appslisters.DeploymentLister
}

func newDeployments(c *ctrl.Context) (workloadKind, cache.SharedIndexInformer) {
	inf := c.ManagedInformers.Deployments()
	return subsetKind[*appsv1.Deployment]{a: deployments{c.KubeClient, inf.Lister()}}, inf.Informer()
}

func (deployments) kind() string         { return "Deployment" }
func (deployments) podOwnerKind() string { return "ReplicaSet" }
func (deployments) partitions() bool     { return false }

func (deployments) template(ud *appsv1alpha1.UnitedDeployment) *metav1.ObjectMeta {
	if t := ud.Spec.Template.DeploymentTemplate; t != nil {
		return &t.ObjectMeta
	}
	return nil
}

func (deployments) newObject() *appsv1.Deployment        { return &appsv1.Deployment{} }
func (deployments) replicas(d *appsv1.Deployment) *int32 { return d.Spec.Replicas }

// setTemplate keeps the selector of an existing Deployment (immutable).
func (deployments) setTemplate(d *appsv1.Deployment, ud *appsv1alpha1.UnitedDeployment, selector *metav1.LabelSelector, create bool) {
	old := d.Spec.Selector
	d.Spec = *ud.Spec.Template.DeploymentTemplate.Spec.DeepCopy()
	d.Spec.Selector = selector
	if !create {
		d.Spec.Selector = old
	}
}

func (deployments) podTemplates(d *appsv1.Deployment, each func(*corev1.PodTemplateSpec)) {
	each(&d.Spec.Template)
}

// setScale writes replicas and paused (the template's own spec.paused also pauses).
func (deployments) setScale(d *appsv1.Deployment, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) {
	replicas := spec.Replicas
	d.Spec.Replicas = &replicas
	d.Spec.Paused = spec.Paused || ud.Spec.Template.DeploymentTemplate.Spec.Paused
}

func (k deployments) lister(namespace string) namespaceLister[*appsv1.Deployment] {
	return k.listed.Deployments(namespace)
}

func (k deployments) client(namespace string) typedClient[*appsv1.Deployment] {
	return k.kube.AppsV1().Deployments(namespace)
}

func (deployments) status(obj *appsv1.Deployment) workloadStatus {
	st := obj.Status
	return workloadCounts(st.Replicas, st.ReadyReplicas, st.UpdatedReplicas, false, st.ObservedGeneration >= obj.Generation)
}
