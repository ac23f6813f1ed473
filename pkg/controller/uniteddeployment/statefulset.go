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

// StatefulSetAdapter manages StatefulSet subsets. The partition is the StatefulSet's own
// spec.updateStrategy.rollingUpdate.partition (ordinals below it keep their revision); paused
// is a partition equal to the replicas, which freezes a rollout in flight.
type StatefulSetAdapter struct {
	Client kubernetes.Interface
	Lister appslisters.StatefulSetLister
}

var _ Adapter = (*StatefulSetAdapter)(nil)

// Kind implements Adapter.
func (a *StatefulSetAdapter) Kind() string { return "StatefulSet" }

// PodOwnerKind implements Adapter.
func (a *StatefulSetAdapter) PodOwnerKind() string { return "StatefulSet" }

// Selected implements Adapter.
func (a *StatefulSetAdapter) Selected(ud *appsv1alpha1.UnitedDeployment) bool {
	return ud.Spec.Template.StatefulSetTemplate != nil
}

// List implements Adapter.
func (a *StatefulSetAdapter) List(ud *appsv1alpha1.UnitedDeployment) ([]*Subset, error) {
	sets, err := a.Lister.StatefulSets(ud.Namespace).List(ownedSelector(ud))
	if err != nil {
		return nil, err
	}
	var out []*Subset
	for _, set := range sets {
		if controlledAndLive(set, ud) {
			out = append(out, newSubset(set, set.Spec.Replicas))
		}
	}
	return out, nil
}

// Create implements Adapter.
func (a *StatefulSetAdapter) Create(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec) (metav1.Object, error) {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ud.Namespace,
			GenerateName:    subsetPrefix(ud, spec.Subset.Name),
			OwnerReferences: []metav1.OwnerReference{*controllerRef(ud)},
		},
	}
	a.applyTemplate(set, ud, spec, true)
	a.applyReplicas(set, spec)
	return a.Client.AppsV1().StatefulSets(ud.Namespace).Create(ctx, set, metav1.CreateOptions{})
}

// applyTemplate writes the template into set, keeping the fields a StatefulSet cannot change
// once created (selector, volumeClaimTemplates, serviceName, podManagementPolicy).
func (a *StatefulSetAdapter) applyTemplate(set *appsv1.StatefulSet, ud *appsv1alpha1.UnitedDeployment, spec *SubsetSpec, create bool) {
	tmpl := ud.Spec.Template.StatefulSetTemplate
	mergeLabels(&set.Labels, workloadLabels(tmpl.Labels, ud, spec))
	mergeLabels(&set.Annotations, workloadAnnotations(tmpl.Annotations, spec))
	desired := tmpl.Spec.DeepCopy()
	if create {
		desired.Selector = subsetSelector(ud, spec.Subset.Name)
	} else {
		desired.Selector = set.Spec.Selector
		desired.VolumeClaimTemplates = set.Spec.VolumeClaimTemplates
		desired.ServiceName = set.Spec.ServiceName
		desired.PodManagementPolicy = set.Spec.PodManagementPolicy
	}
	preparePodTemplate(&desired.Template, ud, spec)
	set.Spec = *desired
}

// applyReplicas writes replicas and the partition (the replicas when paused).
func (a *StatefulSetAdapter) applyReplicas(set *appsv1.StatefulSet, spec *SubsetSpec) {
	replicas := spec.Replicas
	set.Spec.Replicas = &replicas
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		// The template asked for OnDelete: pods change only when deleted, partitions do not apply.
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

// Update implements Adapter.
func (a *StatefulSetAdapter) Update(ctx context.Context, ud *appsv1alpha1.UnitedDeployment, existing *Subset, spec *SubsetSpec) (bool, error) {
	old := existing.Object.(*appsv1.StatefulSet)
	set := old.DeepCopy()
	if spec.ApplyTemplate {
		a.applyTemplate(set, ud, spec, false)
	}
	a.applyReplicas(set, spec)
	if apiequality.Semantic.DeepEqual(old, set) {
		return false, nil
	}
	_, err := a.Client.AppsV1().StatefulSets(set.Namespace).Update(ctx, set, metav1.UpdateOptions{})
	return err == nil, err
}

// Delete implements Adapter.
func (a *StatefulSetAdapter) Delete(ctx context.Context, s *Subset) error {
	err := a.Client.AppsV1().StatefulSets(s.Object.GetNamespace()).Delete(ctx, s.Object.GetName(), deleteOptions(s.Object))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
