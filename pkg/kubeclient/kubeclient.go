// Package kubeclient is the agent's client of native Kubernetes objects: the API groups it
// reads and writes, and nothing else.
//
// kubernetes.NewForConfig builds a client of every API group the library knows (about sixty) and
// hands it out as kubernetes.Interface, so every method of every group's typed client stays
// reachable and is linked into the binary. The agent uses six groups; Interface names them, New
// builds only them (docs/architecture.md, "A lean agent binary"). A fake clientset
// (k8s.io/client-go/kubernetes/fake) satisfies Interface, so unit tests keep using it.
package kubeclient

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/discovery"
	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	autoscalingv2 "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
	batchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1 "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is the part of kubernetes.Interface the agent uses.
type Interface interface {
	Discovery() discovery.DiscoveryInterfaces
	CoreV1() corev1.CoreV1Interface
	AppsV1() appsv1.AppsV1Interface
	BatchV1() batchv1.BatchV1Interface
	AutoscalingV2() autoscalingv2.AutoscalingV2Interface
	CoordinationV1() coordinationv1.CoordinationV1Interface
	DiscoveryV1() discoveryv1.DiscoveryV1Interface
}

// Clientset implements Interface with one client per group, all sharing one HTTP client (as
// kubernetes.NewForConfig's do).
type Clientset struct {
	discovery      *discovery.DiscoveryClient
	coreV1         *corev1.CoreV1Client
	appsV1         *appsv1.AppsV1Client
	batchV1        *batchv1.BatchV1Client
	autoscalingV2  *autoscalingv2.AutoscalingV2Client
	coordinationV1 *coordinationv1.CoordinationV1Client
	discoveryV1    *discoveryv1.DiscoveryV1Client
}

var _ Interface = (*Clientset)(nil)

// New builds the clients for cfg as kubernetes.NewForConfig does: the default user agent when cfg
// has none, one transport shared by every group, and a token bucket from QPS/Burst when cfg has
// no rate limiter (one limiter shared by every group).
func New(cfg *rest.Config) (*Clientset, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	h, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	return newForClient(&c, h)
}

func newForClient(c *rest.Config, h *http.Client) (*Clientset, error) {
	var cs Clientset
	var err error
	if cs.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(c, h); err != nil {
		return nil, err
	}
	if cs.coreV1, err = corev1.NewForConfigAndClient(c, h); err != nil {
		return nil, err
	}
	if cs.appsV1, err = appsv1.NewForConfigAndClient(c, h); err != nil {
		return nil, err
	}
	if cs.batchV1, err = batchv1.NewForConfigAndClient(c, h); err != nil {
		return nil, err
	}
	if cs.autoscalingV2, err = autoscalingv2.NewForConfigAndClient(c, h); err != nil {
		return nil, err
	}
	if cs.coordinationV1, err = coordinationv1.NewForConfigAndClient(c, h); err != nil {
		return nil, err
	}
	if cs.discoveryV1, err = discoveryv1.NewForConfigAndClient(c, h); err != nil {
		return nil, err
	}
	return &cs, nil
}

// Discovery is the discovery client.
func (c *Clientset) Discovery() discovery.DiscoveryInterfaces { return c.discovery }

// CoreV1 is the core/v1 client.
func (c *Clientset) CoreV1() corev1.CoreV1Interface { return c.coreV1 }

// AppsV1 is the apps/v1 client.
func (c *Clientset) AppsV1() appsv1.AppsV1Interface { return c.appsV1 }

// BatchV1 is the batch/v1 client.
func (c *Clientset) BatchV1() batchv1.BatchV1Interface { return c.batchV1 }

// AutoscalingV2 is the autoscaling/v2 client.
func (c *Clientset) AutoscalingV2() autoscalingv2.AutoscalingV2Interface { return c.autoscalingV2 }

// CoordinationV1 is the coordination.k8s.io/v1 client.
func (c *Clientset) CoordinationV1() coordinationv1.CoordinationV1Interface {
	return c.coordinationV1
}

// DiscoveryV1 is the discovery.k8s.io/v1 client (EndpointSlices).
func (c *Clientset) DiscoveryV1() discoveryv1.DiscoveryV1Interface { return c.discoveryV1 }
