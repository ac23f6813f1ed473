package tapp

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/podorder"
)

const (
	// reasonInPlaceUpdating is the reason of a False ConditionInPlaceUpdateReady set by an
	// in-place update; its message is inPlaceMessagePrefix followed by the target template hash.
	reasonInPlaceUpdating = "InPlaceUpdating"
	inPlaceMessagePrefix  = "updating to template "
	// reasonImagesReady is the reason of a True ConditionInPlaceUpdateReady.
	reasonImagesReady = "ImagesReady"
)

func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func inPlaceCondition(pod *corev1.Pod) *corev1.PodCondition {
	return podCondition(pod, appsv1alpha1.ConditionInPlaceUpdateReady)
}

// isInPlaceUpdating reports whether an in-place update of the pod is under way: its readiness
// gate condition is False, or the kubelet does not run it with the resources of its spec yet.
func isInPlaceUpdating(pod *corev1.Pod) bool {
	c := inPlaceCondition(pod)
	return (c != nil && c.Status == corev1.ConditionFalse) || !resourcesApplied(pod)
}

// inPlaceTarget is the template hash an in-place update set the condition False for, or "".
func inPlaceTarget(pod *corev1.Pod) string {
	c := inPlaceCondition(pod)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != reasonInPlaceUpdating {
		return ""
	}
	return strings.TrimPrefix(c.Message, inPlaceMessagePrefix)
}

// podAvailable says whether the pod counts as available at now: running, not terminating, Ready
// for at least minReadySeconds. For a pod that is ready but not yet long enough, wait is the time
// left.
func podAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) (available bool, wait time.Duration) {
	if isTerminating(pod) || pod.Status.Phase != corev1.PodRunning {
		return false, 0
	}
	c := podCondition(pod, corev1.PodReady)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false, 0
	}
	if minReadySeconds <= 0 {
		return true, 0
	}
	left := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// imagesUpdated reports whether every container (and every restartable init container, i.e.
// sidecar) reports, in its status, the image its spec asks for.
func imagesUpdated(pod *corev1.Pod) bool {
	statuses := make(map[string]string, len(pod.Status.ContainerStatuses))
	for _, cs := range pod.Status.ContainerStatuses {
		statuses[cs.Name] = cs.Image
	}
	for _, c := range pod.Spec.Containers {
		img, ok := statuses[c.Name]
		if !ok || !sameImage(img, c.Image) {
			return false
		}
	}
	initStatuses := make(map[string]string, len(pod.Status.InitContainerStatuses))
	for _, cs := range pod.Status.InitContainerStatuses {
		initStatuses[cs.Name] = cs.Image
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		img, ok := initStatuses[c.Name]
		if !ok || !sameImage(img, c.Image) {
			return false
		}
	}
	return true
}

// sameImage compares an image reported by a container runtime with the one in the pod spec.
// Runtimes report the fully qualified name, so "nginx:1.27" in the spec is
// "docker.io/library/nginx:1.27" in the status.
func sameImage(status, spec string) bool {
	return status == spec || normalizeImage(status) == normalizeImage(spec)
}

func normalizeImage(image string) string {
	name, suffix := image, ""
	if i := strings.Index(name, "@"); i >= 0 {
		name, suffix = name[:i], name[i:]
	} else if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, suffix = name[:i], name[i:]
	} else {
		suffix = ":latest"
	}
	first, rest, found := strings.Cut(name, "/")
	switch {
	case !found:
		name = "docker.io/library/" + name
	case first == "index.docker.io":
		name = "docker.io/" + rest
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	if strings.HasPrefix(name, "docker.io/") && strings.Count(name, "/") == 1 {
		name = "docker.io/library/" + strings.TrimPrefix(name, "docker.io/")
	}
	return name + suffix
}

// shouldMarkReady says whether the agent should set the pod's ConditionInPlaceUpdateReady True:
// the pod has the gate, is running, every container reports the image and the resources of its
// spec and the condition is not True already. While an in-place update is visible only in the
// condition (the cache has not yet caught up with the image patch or the resize), the pod's spec
// still shows the old images and resources, which its containers do report: that must not count
// as done, so a False condition of an in-place update only turns True once the pod runs the
// target template (or the template its instance wants now, desired, should the update have been
// reverted; see templateSet.runs). relabel is the template whose hash labels the pod should
// get with the condition: the one it runs, when a resize-only update left its labels behind.
func shouldMarkReady(pod *corev1.Pod, templates *templateSet, desired *templateInfo) (ok bool, relabel *templateInfo) {
	if !hasReadinessGate(pod) || isTerminating(pod) || pod.Status.Phase != corev1.PodRunning {
		return false, nil
	}
	c := inPlaceCondition(pod)
	if c != nil && c.Status == corev1.ConditionTrue {
		return false, nil
	}
	if !imagesUpdated(pod) || !resourcesApplied(pod) {
		return false, nil
	}
	target := inPlaceTarget(pod)
	if target == "" {
		return true, nil
	}
	var on *templateInfo
	switch {
	case desired != nil && templates.runs(pod, desired):
		on = desired
	case templates.runsHash(pod, target):
		on = templates.byHash(target)
	default:
		return false, nil
	}
	if on != nil && pod.Labels[appsv1alpha1.LabelTemplateHash] != on.hash {
		return true, on
	}
	return true, nil
}

// sortForDeletion orders pods the ActivePods way (the cheapest to lose first); among equals the
// highest instance id goes first.
func sortForDeletion(pods []*corev1.Pod) {
	// Pre-sort by id, descending; podorder.Sort is stable.
	sort.SliceStable(pods, func(i, j int) bool {
		a, _ := instanceID(pods[i])
		b, _ := instanceID(pods[j])
		return a > b
	})
	podorder.Sort(pods)
}
