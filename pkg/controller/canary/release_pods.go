package canary

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/analysis"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// The pods a podHealth check measures are the release's new pods, whatever the mode
// (docs/analysis.md, "podHealth in every mode"): the canary Deployment's (the pair, and the
// temporary one of a Deployment target), or a target's pods of its update revision, which every
// in-place kind labels (revisionPods).

// revisionPods is a target workload whose pods of the update revision can be told apart.
type revisionPods interface {
	// updatePods selects them; cached says the agent's pod informer holds them (they carry the
	// managed-by label), else they are listed from the API server.
	updatePods() (sel labels.Selector, cached bool)
}

// releasePods are the pods a sync's podHealth checks measure.
type releasePods struct {
	selector labels.Selector // nil: none can be told apart (the check errs)
	cached   bool
	owner    types.UID // listed pods: only those this workload controls
	// want is the canary Deployment's replicas: a check that sees none of them while it wants
	// some errs (expectPods); 0 for a target, whose status may lag its pods.
	want int32
}

// podsToMeasure are the release's new pods as the sync observed the release.
func podsToMeasure(obs *observed) releasePods {
	if w, ok := obs.target.(revisionPods); ok && obs.target != nil {
		sel, cached := w.updatePods()
		return releasePods{selector: sel, cached: cached, owner: obs.target.GetUID()}
	}
	return releasePods{selector: canaryPods(obs.canaryDep), cached: true, want: replicasOf(obs.canaryDep)}
}

// podHealth is the provider of a podHealth check over pods.
func (c *Controller) podHealth(ctx context.Context, namespace string, pods releasePods) (analysis.Provider, error) {
	if pods.selector == nil {
		return nil, fmt.Errorf("podHealth: no pod of the release's new revision can be told apart yet")
	}
	if pods.cached {
		if c.analysisEnv.Pods == nil {
			// The agent gives the controller no pod cache: the canary Deployment's pods are in
			// none (docs/architecture.md, "What the agent caches"), so they are listed when
			// measured, as a target's pods outside the cache are.
			return expectPods{Provider: analysis.PodHealth{Client: c.kubeClient, Namespace: namespace, Selector: pods.selector}, want: pods.want}, nil
		}
		return expectPods{Provider: analysis.PodHealth{Pods: c.analysisEnv.Pods.Pods(namespace), Selector: pods.selector}, want: pods.want}, nil
	}
	return analysis.PodHealth{Pods: listedPods{ctx: ctx, kube: c.kubeClient, namespace: namespace, owner: pods.owner}, Selector: pods.selector}, nil
}

// revisionSelector is a workload's selector narrowed to the pods labelled key=value; nil when
// either is missing.
func revisionSelector(sel *metav1.LabelSelector, key, value string) labels.Selector {
	if sel == nil || value == "" {
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() {
		return nil
	}
	req, err := labels.NewRequirement(key, selection.Equals, []string{value})
	if err != nil {
		return nil
	}
	return s.Add(*req)
}

// listedPods lists pods from the API server for one measurement (from its watch cache:
// resourceVersion 0), keeping those the owner controls: the pods of a StatefulSet or DaemonSet
// target are not in the agent's pod cache, which holds only the agent's own.
type listedPods struct {
	ctx       context.Context // the sync's, for the one list of a measurement
	kube      kubeclient.Interface
	namespace string
	owner     types.UID
}

var _ corelisters.PodNamespaceLister = listedPods{}

func (l listedPods) List(sel labels.Selector) ([]*corev1.Pod, error) {
	list, err := l.kube.CoreV1().Pods(l.namespace).List(l.ctx, metav1.ListOptions{LabelSelector: sel.String(), ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == l.owner {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l listedPods) Get(name string) (*corev1.Pod, error) {
	return l.kube.CoreV1().Pods(l.namespace).Get(l.ctx, name, metav1.GetOptions{})
}
