package tapp

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// resizable are the resources the kubelet changes in place (pods/resize); a template change
// of any other resource is still refused by the server on a running pod.
var resizable = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// inPlaceCompatible says whether pod can move to template info in place: the templates differ at
// most in images, container resources, labels and annotations. Pods labelled by an agent that
// hashed resources into the uniq hash still move in place when only images changed.
func inPlaceCompatible(pod *corev1.Pod, info *templateInfo) bool {
	h := pod.Labels[appsv1alpha1.LabelUniqHash]
	return h == info.uniqHash || h == info.imageOnlyUniqHash
}

// planInPlace decides the next step of the in-place update of pod to template info. A pod with
// the readiness gate has the gate set False first; the images and resources are patched only
// once the gate has been False for grace (measured from the condition's lastTransitionTime, the
// time the endpoints controller saw it go). wait, when positive, is when to look again.
func planInPlace(pod *corev1.Pod, id int, info *templateInfo, grace time.Duration, now time.Time) (u inPlaceUpdate, wait time.Duration) {
	u = inPlaceUpdate{pod: pod, id: id, to: info, apply: true}
	if !hasReadinessGate(pod) {
		return u, 0
	}
	if inPlaceTarget(pod) != info.hash {
		u.closeGate = true
		u.apply = grace <= 0
		return u, grace
	}
	left := inPlaceCondition(pod).LastTransitionTime.Add(grace).Sub(now)
	u.apply = left <= 0
	return u, left
}

// effectiveResources is what the API server stores for r: a request left out where a limit is
// set defaults to that limit.
func effectiveResources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *r.DeepCopy()
	for name, q := range r.Limits {
		if _, ok := out.Requests[name]; !ok {
			if out.Requests == nil {
				out.Requests = corev1.ResourceList{}
			}
			out.Requests[name] = q.DeepCopy()
		}
	}
	return out
}

// sameResizable compares the resizable resources of two lists; when onlyIn is set, only the
// names it holds count (a container status lists just what the runtime reports).
func sameResizable(a, b corev1.ResourceList, onlyIn corev1.ResourceList) bool {
	for _, name := range resizable {
		if onlyIn != nil {
			if _, ok := onlyIn[name]; !ok {
				continue
			}
		}
		qa, okA := a[name]
		qb, okB := b[name]
		if okA != okB || (okA && qa.Cmp(qb) != 0) {
			return false
		}
	}
	return true
}

// resourcesMatch reports whether every regular container of pod has, in its spec, the values of
// the resizable resources template info sets (requests defaulted from limits). Resources the
// template does not set are not compared: admission (a LimitRange) may have added them.
func resourcesMatch(pod *corev1.Pod, info *templateInfo) bool {
	have := make(map[string]*corev1.ResourceRequirements, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		have[pod.Spec.Containers[i].Name] = &pod.Spec.Containers[i].Resources
	}
	for _, c := range info.template.Spec.Containers {
		cur, ok := have[c.Name]
		if !ok {
			return false
		}
		want := effectiveResources(c.Resources)
		if !sameResizable(cur.Requests, want.Requests, nonNil(want.Requests)) || !sameResizable(cur.Limits, want.Limits, nonNil(want.Limits)) {
			return false
		}
	}
	return true
}

// nonNil is l, or an empty list for nil (sameResizable's onlyIn compares every name when nil).
func nonNil(l corev1.ResourceList) corev1.ResourceList {
	if l == nil {
		return corev1.ResourceList{}
	}
	return l
}

// resizePatch is the strategic merge patch for the pods/resize subresource giving every regular
// container of pod the resources of its template, or nil when they have them already. Resources
// the pod has and the template dropped are removed (null).
func resizePatch(pod *corev1.Pod, to *templateInfo) []byte {
	have := map[string]corev1.ResourceRequirements{}
	for _, c := range pod.Spec.Containers {
		have[c.Name] = c.Resources
	}
	list := func(cur, want corev1.ResourceList) map[string]any {
		out := map[string]any{}
		for name, q := range want {
			out[string(name)] = q.String()
		}
		for name := range cur {
			if _, ok := want[name]; !ok {
				out[string(name)] = nil
			}
		}
		return out
	}
	var containers []any
	for _, c := range to.template.Spec.Containers {
		cur, ok := have[c.Name]
		want := effectiveResources(c.Resources)
		if !ok || (sameResizable(cur.Requests, want.Requests, nil) && sameResizable(cur.Limits, want.Limits, nil)) {
			continue
		}
		containers = append(containers, map[string]any{"name": c.Name, "resources": map[string]any{
			"requests": list(cur.Requests, want.Requests),
			"limits":   list(cur.Limits, want.Limits),
		}})
	}
	if len(containers) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"containers": containers}})
	return b
}

// resourcesApplied reports whether the kubelet runs every container with the resources of its
// spec: no resize is pending or in progress, and each container status that reports resources
// reports, for what the spec sets, the values of the spec.
func resourcesApplied(pod *corev1.Pod) bool {
	for _, t := range []corev1.PodConditionType{corev1.PodResizePending, corev1.PodResizeInProgress} {
		if c := podCondition(pod, t); c != nil && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	reported := make(map[string]*corev1.ResourceRequirements, len(pod.Status.ContainerStatuses))
	for i := range pod.Status.ContainerStatuses {
		reported[pod.Status.ContainerStatuses[i].Name] = pod.Status.ContainerStatuses[i].Resources
	}
	for _, c := range pod.Spec.Containers {
		st := reported[c.Name]
		if st == nil {
			continue
		}
		if !sameResizable(st.Requests, c.Resources.Requests, c.Resources.Requests) || !sameResizable(st.Limits, c.Resources.Limits, c.Resources.Limits) {
			return false
		}
	}
	return true
}
