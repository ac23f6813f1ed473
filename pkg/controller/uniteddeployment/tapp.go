package uniteddeployment

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	listers "github.com/kubectl-workload/kubectl-workload/pkg/generated/listers/apps/v1alpha1"
)

// TAppAdapter manages TApp subsets. The partition is the TApp's spec.updateStrategy.partition
// (instance ids below it keep their template) and paused is spec.updateStrategy.paused.
type TAppAdapter struct {
	Client versioned.Interface
	Lister listers.TAppLister
}

var _ Adapter = (*TAppAdapter)(nil)

// Kind implements Adapter.
func (a *TAppAdapter) Kind() string { return "TApp" }

// PodOwnerKind implements Adapter.
func (a *TAppAdapter) PodOwnerKind() string { return "TApp" }

// Selected implements Adapter.
func (a *TAppAdapter) Selected(ud *appsv1alpha1.UnitedDeployment) bool {
	return ud.Spec.Template.TAppTemplate != nil
}

// List implements Adapter.
func (a *TAppAdapter) List(ud *appsv1alpha1.UnitedDeployment) ([]*Subset, error) {
	tapps, err := a.Lister.TApps(ud.Namespace).List(ownedSelector(ud))
	if err != nil {
		return nil, err
	}
	var out []*Subset
	for _, t := range tapps {
		if controlledAndLive(t, ud) {
			out = append(out, newSubset(t, t.Spec.Replicas))
		}
	}
	return out, nil
}

// Create implements Adapter.
func (a *TAppAdapter) Create(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) (metav1.Object, error) {
	t := &appsv1alpha1.TApp{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ud.Namespace,
			GenerateName:    subsetPrefix(ud, spec.Subset.Name),
			OwnerReferences: []metav1.OwnerReference{*controllerRef(ud)},
		},
	}
	a.applyTemplate(t, ud, spec, true)
	a.applyReplicas(t, ud, spec)
	return a.Client.AppsV1alpha1().TApps(ud.Namespace).Create(ctx, t, metav1.CreateOptions{})
}

// applyTemplate writes the template into t: spec.template and every templatePool entry get the
// subset's labels and topology. An existing TApp keeps its selector and its per-instance
// statuses (instances killed on the subset TApp stay killed).
func (a *TAppAdapter) applyTemplate(t *appsv1alpha1.TApp, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec, create bool) {
	tmpl := ud.Spec.Template.TAppTemplate
	mergeLabels(&t.Labels, workloadLabels(tmpl.Labels, ud, spec))
	mergeLabels(&t.Annotations, workloadAnnotations(tmpl.Annotations, spec))
	desired := tmpl.Spec.DeepCopy()
	if create {
		desired.Selector = subsetSelector(ud, spec.Subset.Name)
	} else {
		desired.Selector = t.Spec.Selector
		if len(desired.Statuses) == 0 {
			desired.Statuses = t.Spec.Statuses
		}
	}
	preparePodTemplate(&desired.Template, ud, spec)
	for name, pt := range desired.TemplatePool {
		preparePodTemplate(&pt, ud, spec)
		desired.TemplatePool[name] = pt
	}
	t.Spec = *desired
}

// applyReplicas writes replicas, partition and paused (the template's own paused also pauses).
func (a *TAppAdapter) applyReplicas(t *appsv1alpha1.TApp, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) {
	replicas := spec.Replicas
	t.Spec.Replicas = &replicas
	partition := spec.Partition
	t.Spec.UpdateStrategy.Partition = &partition
	t.Spec.UpdateStrategy.Paused = spec.Paused || ud.Spec.Template.TAppTemplate.Spec.UpdateStrategy.Paused
}

// Update implements Adapter.
func (a *TAppAdapter) Update(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, existing *Subset, spec *SubsetSpec) (bool, error) {
	old := existing.Object.(*appsv1alpha1.TApp)
	t := old.DeepCopy()
	if spec.ApplyTemplate {
		a.applyTemplate(t, ud, spec, false)
	}
	a.applyReplicas(t, ud, spec)
	if apiequality.Semantic.DeepEqual(old, t) {
		return false, nil
	}
	_, err := a.Client.AppsV1alpha1().TApps(t.Namespace).Update(ctx, t, metav1.UpdateOptions{})
	return err == nil, err
}

// Delete implements Adapter.
func (a *TAppAdapter) Delete(ctx context.Context, s *Subset) error {
	err := a.Client.AppsV1alpha1().TApps(s.Object.GetNamespace()).Delete(ctx, s.Object.GetName(), deleteOptions(s.Object))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
