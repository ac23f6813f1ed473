package canary

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// templateHash is the hash of what the canary Deployment is made from, besides its replicas.
func (r *pairPlan) templateHash() string {
	h := fnv.New32a()
	raw, _ := json.Marshal(r.names.template)
	h.Write(raw)
	fmt.Fprintf(h, "/minReadySeconds=%d", r.canary.Spec.MinReadySeconds)
	return fmt.Sprintf("%08x", h.Sum32())
}

// newCanaryDeployment builds the canary Deployment with the given replicas.
func (r *pairPlan) newCanaryDeployment(replicas int32) *appsv1.Deployment {
	cn := r.canary
	template := r.names.template.DeepCopy()
	selector := maps.Clone(template.Labels)
	// The pods carry the agent's labels too (not the selector, which stays the user's): the
	// agent's pod informer sees only managed-by pods, and podHealth checks read them from it.
	template.Labels = maps.Clone(template.Labels)
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByAgent
	template.Labels[v1alpha1.LabelCanaryName] = cn.Name
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      r.names.canary,
			Namespace: cn.Namespace,
			Labels: map[string]string{
				v1alpha1.LabelManagedBy:  v1alpha1.ManagedByAgent,
				v1alpha1.LabelCanaryName: cn.Name,
			},
			Annotations:     map[string]string{v1alpha1.AnnotationTemplateHash: r.templateHash()},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cn, controllerKind)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas:        &replicas,
			Selector:        &metav1.LabelSelector{MatchLabels: selector},
			Template:        *template,
			MinReadySeconds: cn.Spec.MinReadySeconds,
			// Nothing to replace at creation; updateCanaryTemplate sets the bounds of each
			// later rollout from the surge budget.
			Strategy: rollingStrategy(1, 0),
		},
	}
}

// createCanary decides to create the canary Deployment with the given replicas.
func (r *pairPlan) createCanary(replicas int32) {
	d := r.newCanaryDeployment(replicas)
	r.canaryDep, r.canaryNew = d, true
	r.writes = append(r.writes, deploymentWrite{kind: createCanary, object: d.DeepCopy(), to: replicas})
}

// updateCanaryTemplate decides to rewrite the canary Deployment's template and minReadySeconds
// when the Canary's changed, and reports whether it did. The Deployment then replaces its pods
// with its own rolling update, whose bounds are set from the release's at that moment: it may
// add only the room pods the surge budget has left (its fixed 25% would add pods the budget
// does not have), and remove only pods that are not available (their capacity is not counted;
// canaryCapacity counts no more than it keeps). With neither (every canary pod available and
// no room), the update waits for the stable pods the step lets go.
func (r *pairPlan) updateCanaryTemplate(room int32) bool {
	hash := r.templateHash()
	if r.canaryDep.Annotations[v1alpha1.AnnotationTemplateHash] == hash && r.canaryDep.Spec.MinReadySeconds == r.canary.Spec.MinReadySeconds {
		return false
	}
	surge := max(0, room)
	unavailable := max(0, replicasOf(r.canaryDep)-r.canaryAvailable())
	if surge == 0 && unavailable == 0 {
		return false
	}
	d := r.canaryDep.DeepCopy()
	want := r.newCanaryDeployment(replicasOf(d))
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[v1alpha1.AnnotationTemplateHash] = hash
	d.Spec.Template = want.Spec.Template
	d.Spec.MinReadySeconds = want.Spec.MinReadySeconds
	d.Spec.Strategy = rollingStrategy(surge, unavailable)
	r.canaryDep = d
	r.writes = append(r.writes, deploymentWrite{kind: updateCanary, object: d.DeepCopy()})
	return true
}

// rollingStrategy is a RollingUpdate strategy with absolute bounds.
func rollingStrategy(surge, unavailable int32) appsv1.DeploymentStrategy {
	s, u := intstr.FromInt32(surge), intstr.FromInt32(unavailable)
	return appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u},
	}
}

// templateChangedAfterCompletion refuses, as Degraded, a new canary template once the release
// completed: the canary Deployment then serves every replica, so writing the template to it
// would roll all of them with the Deployment's own strategy, without steps, pauses or checks.
func (r *pairPlan) templateChangedAfterCompletion() bool {
	d := r.canaryDep
	if d == nil || d.Annotations[v1alpha1.AnnotationTemplateHash] == r.templateHash() {
		return false
	}
	r.setDegraded(v1alpha1.ReasonTemplateChangedAfterCompletion, fmt.Sprintf(
		"spec.canary.template changed after the release completed: Deployment %q keeps the released template, since writing it would roll every pod without steps. To release the new template, abort (kubectl workload abort), wait for RolledBack, then kubectl workload retry releases it from step 1; or create a new Canary whose stableRef is %q; or restore the template",
		d.Name, d.Name))
	return true
}

// replicasPatch is a merge patch setting spec.replicas.
func replicasPatch(n int32) []byte {
	return fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
}

// scaleCanary decides to scale the canary Deployment to n.
func (r *pairPlan) scaleCanary(n int32) {
	d := r.canaryDep.DeepCopy()
	from := replicasOf(d)
	d.Spec.Replicas = &n
	r.canaryDep = d
	r.writes = append(r.writes, deploymentWrite{kind: scaleCanary, object: d.DeepCopy(), patch: replicasPatch(n), from: from, to: n})
}

// scaleStable decides to scale the stable Deployment to n.
func (r *pairPlan) scaleStable(n int32) {
	d := r.stable.DeepCopy()
	from := replicasOf(d)
	d.Spec.Replicas = &n
	r.stable, r.stableRest = d, true
	r.writes = append(r.writes, deploymentWrite{kind: scaleStable, object: d.DeepCopy(), patch: replicasPatch(n), from: from, to: n})
}

// isOwnedBy reports whether d is controlled by the Canary cn.
func isOwnedBy(d *appsv1.Deployment, cn *v1alpha1.Canary) bool {
	ref := metav1.GetControllerOf(d)
	return ref != nil && ref.UID == cn.UID && ref.Kind == Kind
}

// replicasOf returns a Deployment's spec.replicas (1 when unset, as the API server defaults it).
func replicasOf(d *appsv1.Deployment) int32 {
	if d == nil {
		return 0
	}
	return v1alpha1.ReplicasOrDefault(d.Spec.Replicas)
}

// statusObserved reports whether the Deployment controller has observed d's latest spec, so that
// d's status counts describe it.
func statusObserved(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation
}

// templateLabelsSelected reports whether a Deployment's selector still selects the pod labels of
// a template, which the API server requires of every Deployment.
func templateLabelsSelected(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return !s.Empty() && s.Matches(labels.Set(t.Labels))
}
