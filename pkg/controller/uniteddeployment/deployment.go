package uniteddeployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// DeploymentAdapter manages Deployment subsets. A Deployment cannot keep some of its pods on an
// old template, so it has no partition: the controller refuses a non-zero partition for it
// (holding the subset's template and reporting a condition). Paused is spec.paused.
type DeploymentAdapter struct {
	Client kubernetes.Interface
	Lister appslisters.DeploymentLister
}

var _ Adapter = (*DeploymentAdapter)(nil)

// Kind implements Adapter.
func (a *DeploymentAdapter) Kind() string { return "Deployment" }

// PodOwnerKind implements Adapter.
func (a *DeploymentAdapter) PodOwnerKind() string { return "ReplicaSet" }

// Selected implements Adapter.
func (a *DeploymentAdapter) Selected(ud *appsv1alpha1.UnitedDeployment) bool {
	return ud.Spec.Template.DeploymentTemplate != nil
}

// List implements Adapter.
func (a *DeploymentAdapter) List(ud *appsv1alpha1.UnitedDeployment) ([]*Subset, error) {
	deps, err := a.Lister.Deployments(ud.Namespace).List(ownedSelector(ud))
	if err != nil {
		return nil, err
	}
	var out []*Subset
	for _, d := range deps {
		if controlledAndLive(d, ud) {
			out = append(out, newSubset(d, d.Spec.Replicas))
		}
	}
	return out, nil
}

// Create implements Adapter.
func (a *DeploymentAdapter) Create(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) (metav1.Object, error) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ud.Namespace,
			GenerateName:    subsetPrefix(ud, spec.Subset.Name),
			OwnerReferences: []metav1.OwnerReference{*controllerRef(ud)},
		},
	}
	a.applyTemplate(d, ud, spec, true)
	a.applyReplicas(d, ud, spec)
	return a.Client.AppsV1().Deployments(ud.Namespace).Create(ctx, d, metav1.CreateOptions{})
}

// applyTemplate writes the template into d, keeping the selector of an existing Deployment
// (immutable).
func (a *DeploymentAdapter) applyTemplate(d *appsv1.Deployment, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec, create bool) {
	tmpl := ud.Spec.Template.DeploymentTemplate
	mergeLabels(&d.Labels, workloadLabels(tmpl.Labels, ud, spec))
	mergeLabels(&d.Annotations, workloadAnnotations(tmpl.Annotations, spec))
	desired := tmpl.Spec.DeepCopy()
	if create {
		desired.Selector = subsetSelector(ud, spec.Subset.Name)
	} else {
		desired.Selector = d.Spec.Selector
	}
	preparePodTemplate(&desired.Template, ud, spec)
	d.Spec = *desired
}

// applyReplicas writes replicas and paused (the template's own spec.paused also pauses).
func (a *DeploymentAdapter) applyReplicas(d *appsv1.Deployment, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) {
	replicas := spec.Replicas
	d.Spec.Replicas = &replicas
	d.Spec.Paused = spec.Paused || ud.Spec.Template.DeploymentTemplate.Spec.Paused
}

// Update implements Adapter.
func (a *DeploymentAdapter) Update(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, existing *Subset, spec *SubsetSpec) (bool, error) {
	old := existing.Object.(*appsv1.Deployment)
	d := old.DeepCopy()
	if spec.ApplyTemplate {
		a.applyTemplate(d, ud, spec, false)
	}
	a.applyReplicas(d, ud, spec)
	if apiequality.Semantic.DeepEqual(old, d) {
		return false, nil
	}
	_, err := a.Client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	return err == nil, err
}

// Delete implements Adapter.
func (a *DeploymentAdapter) Delete(ctx context.Context, s *Subset) error {
	err := a.Client.AppsV1().Deployments(s.Object.GetNamespace()).Delete(ctx, s.Object.GetName(), deleteOptions(s.Object))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
