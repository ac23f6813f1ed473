package analysis

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/podorder"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// PodHealth measures the canary's pods from a lister, or from the API server when it has none:
// how many there are, how many are ready, and their container restarts. Terminating pods are
// left out: they no longer serve.
type PodHealth struct {
	Pods PodsLister
	// Client and Namespace list the pods from the API server when Pods is nil (the agent caches
	// no canary pod: docs/architecture.md, "What the agent caches").
	Client    kubeclient.Interface
	Namespace string
	Selector  labels.Selector
}

// PodsLister is the part of a namespace's pod lister PodHealth reads.
type PodsLister interface {
	List(labels.Selector) ([]*corev1.Pod, error)
}

// Measure returns the counts pods, ready, notReady, restarts (the most of any one pod) and
// totalRestarts.
func (p PodHealth) Measure(ctx context.Context, _ int32) (any, error) {
	pods, err := p.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing canary pods: %v", err)
	}
	return podHealthCounts(pods), nil
}

func (p PodHealth) list(ctx context.Context) ([]*corev1.Pod, error) {
	if p.Pods != nil {
		return p.Pods.List(p.Selector)
	}
	// ResourceVersion "0": served from the API server's watch cache, as an informer's list is.
	l, err := p.Client.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: p.Selector.String(), ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func podHealthCounts(pods []*corev1.Pod) map[string]int64 {
	counts := map[string]int64{"pods": 0, "ready": 0, "notReady": 0, "restarts": 0, "totalRestarts": 0}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		counts["pods"]++
		if podorder.IsReady(pod) {
			counts["ready"]++
		} else {
			counts["notReady"]++
		}
		var restarts int64
		for _, cs := range pod.Status.ContainerStatuses {
			restarts += int64(cs.RestartCount)
		}
		counts["totalRestarts"] += restarts
		counts["restarts"] = max(counts["restarts"], restarts)
	}
	return counts
}
