package canary

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/expectations"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeinformers"
)

// followTarget returns the Canary as a sync of an in-place release counts it: with spec.replicas
// left out (0), the total is the target's own replicas of this sync, so that an autoscaler
// scaling the workload moves the total, and every step's share of it, at the next sync
// (docs/canary.md, "Autoscaling"). The copy is the sync's only: the agent never writes
// spec.replicas, which stays the user's (or absent).
func followTarget(cn *v1alpha1.Canary, t targetWorkload) *v1alpha1.Canary {
	if cn.Spec.Replicas != 0 || t == nil {
		return cn
	}
	replicas := t.state().replicas
	if replicas == 0 {
		return cn
	}
	cp := cn.DeepCopy()
	cp.Spec.Replicas = replicas
	return cp
}

// fillScale fills what the Canary's scale subresource reads besides spec.replicas: the pods the
// release runs now, of either template, and, when a Deployment's selector picks them (both
// Deployments of a pair carry the stable Deployment's labels), that selector for an
// autoscaler's per-pod metrics.
func fillScale(st *v1alpha1.CanaryStatus, selector *metav1.LabelSelector) {
	st.Replicas = st.StableReplicas + st.CanaryReplicas
	st.Selector = ""
	if selector == nil {
		return
	}
	if sel, err := metav1.LabelSelectorAsSelector(selector); err == nil {
		st.Selector = sel.String()
	}
}

// An autoscaler on a Deployment whose replicas the release sets (the stable Deployment of a
// pair, a Deployment target, scaled down as the canary grows) cannot work: each would undo the
// other. It is told by the agent's HorizontalPodAutoscaler lister, by scaleTargetRef, rather
// than by the field manager of the scale writes (docs/canary.md, "Autoscaling"): it is known
// before the release starts and before any write, its name goes in the message, and a person's
// one-off kubectl scale (a scale write too) stays a change the contest rule corrects.

// autoscalerOf returns the name of a HorizontalPodAutoscaler of namespace whose scaleTargetRef
// is Deployment name (the first by name when several are), "" when none is or the agent has
// no HorizontalPodAutoscaler informer.
func (c *Controller) autoscalerOf(namespace, name string) (string, error) {
	if c.hpaLister == nil {
		return "", nil
	}
	hpas, err := c.hpaLister.HorizontalPodAutoscalers(namespace).List(labels.Everything())
	if err != nil {
		return "", err
	}
	var names []string
	for _, h := range hpas {
		if scalesDeployment(h, name) {
			names = append(names, h.Name)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	slices.Sort(names)
	return names[0], nil
}

// scalesDeployment reports whether h scales the apps Deployment name.
func scalesDeployment(h *autoscalingv2.HorizontalPodAutoscaler, name string) bool {
	ref := h.Spec.ScaleTargetRef
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	return ref.Kind == "Deployment" && ref.Name == name && (group == "apps" || ref.APIVersion == "")
}

// watchAutoscalers lists the HorizontalPodAutoscalers for autoscalerOf and enqueues, on every
// event of one, the Canaries that read the Deployment it scales (before and after an update).
func (c *Controller) watchAutoscalers(hpas kubeinformers.HorizontalPodAutoscalerInformer) error {
	c.hpaLister = hpas.Lister()
	return c.Watch(hpas.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    c.handleAutoscaler,
		UpdateFunc: func(old, obj interface{}) { c.handleAutoscaler(old); c.handleAutoscaler(obj) },
		DeleteFunc: c.handleAutoscaler,
	})
}

// handleAutoscaler enqueues the Canaries that read the Deployment a HorizontalPodAutoscaler
// scales.
func (c *Controller) handleAutoscaler(obj interface{}) {
	o, err := expectations.ObjectFromDeleteEvent(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok || h.Spec.ScaleTargetRef.Kind != "Deployment" {
		return
	}
	canaries, err := c.canaryIndexer.ByIndex(deploymentIndex, h.Namespace+"/"+h.Spec.ScaleTargetRef.Name)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, cn := range canaries {
		c.Enqueue(cn)
	}
}

// refuseAutoscaled sets Degraded, and reports true, when a HorizontalPodAutoscaler scales the
// Deployment d the release scales: nothing is written then.
func (r *decision) refuseAutoscaled(dep string) bool {
	hpa := r.obs.autoscaler
	if hpa == "" {
		return false
	}
	r.setDegraded(v1alpha1.ReasonAutoscaledDeployment, fmt.Sprintf(
		"HorizontalPodAutoscaler %q scales Deployment %q, whose replicas this Canary sets as the canary grows: each would undo the other. "+
			"Point its scaleTargetRef at the Canary (apiVersion: apps.workload.dev/v1alpha1, kind: Canary, name: %s): it then sets spec.replicas, the total the release shares out; nothing is changed until then",
		hpa, dep, r.canary.Name))
	return true
}

// followTotal scales a held Deployment target to the Canary's spec.replicas: once held, the
// target's replicas are the Canary's, between releases as during one, so that an autoscaler
// pointed at the Canary (the only way to autoscale a Deployment target: one on the Deployment
// is refused by refuseAutoscaled) moves the Deployment at every time (docs/canary-targets.md,
// "Autoscaling"). A scale of the Deployment by anyone else is set back, under the contest rule
// of every write of its replicas. Only the first hold refuses a difference instead (InvalidSpec):
// a new Canary must not resize a running Deployment that its author meant to describe.
func (r *deploymentPlan) followTotal() {
	r.scaleStable(r.canary.Spec.Replicas)
}
