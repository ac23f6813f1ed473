package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Zones are the zones of the default nodes, in topology.kubernetes.io/zone.
var Zones = []string{"zone-a", "zone-b", "zone-c"}

// ZoneLabel is the well-known label that places a node in a zone.
const ZoneLabel = corev1.LabelTopologyZone

// kwokNodeAnnotation marks the nodes kwok manages (see kwokConfigYAML).
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// Node is a fake node.
type Node struct {
	Name string
	Zone string
}

// DefaultNodes returns two nodes in each of Zones.
func DefaultNodes() []Node {
	var nodes []Node
	for _, zone := range Zones {
		for i := range 2 {
			nodes = append(nodes, Node{Name: fmt.Sprintf("kwok-%s-%d", zone, i), Zone: zone})
		}
	}
	return nodes
}

// registerNodes creates the nodes as a kubelet would register them, with
// their capacity and a kubelet version matching the control plane in the
// status; kwok then reports them Ready and keeps them so.
func registerNodes(ctx context.Context, cs kubernetes.Interface, nodes []Node, podsPerNode int, kubeletVersion string) error {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("4Ti"),
		corev1.ResourcePods:   *resource.NewQuantity(int64(podsPerNode), resource.DecimalSI),
	}
	for i, n := range nodes {
		// Each node gets its own /16 so that kwok, which hands out pod IPs
		// from the node's pod CIDR, never runs out at 10 000+ pods.
		podCIDR := fmt.Sprintf("10.%d.0.0/16", 128+i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: n.Name,
				Labels: map[string]string{
					corev1.LabelHostname:       n.Name,
					ZoneLabel:                  n.Zone,
					corev1.LabelTopologyRegion: "local",
					corev1.LabelOSStable:       "linux",
					corev1.LabelArchStable:     "amd64",
					"type":                     "kwok",
				},
				Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			},
			Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
			Status: corev1.NodeStatus{
				Capacity:    resources,
				Allocatable: resources,
				NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: kubeletVersion},
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s: %w", n.Name, err)
		}
	}
	return nil
}

func nodesReady(ctx context.Context, cs kubernetes.Interface, nodes []Node) (bool, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	ready := map[string]bool{}
	for _, n := range list.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready[n.Name] = true
			}
		}
	}
	for _, n := range nodes {
		if !ready[n.Name] {
			return false, nil
		}
	}
	return true, nil
}
