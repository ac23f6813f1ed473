package analysis

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/controller/podorder"
)

// PodHealth measures the canary's pods from a lister: how many there are, how many are ready,
// and their container restarts. Terminating pods are left out: they no longer serve.
type PodHealth struct {
	Pods     corelisters.PodNamespaceLister
	Selector labels.Selector
}

// Measure returns the counts pods, ready, notReady, restarts (the most of any one pod) and
// totalRestarts.
func (p PodHealth) Measure(_ context.Context, _ int32) (any, error) {
	pods, err := p.Pods.List(p.Selector)
	if err != nil {
		return nil, fmt.Errorf("listing canary pods: %v", err)
	}
	return podHealthCounts(pods), nil
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
