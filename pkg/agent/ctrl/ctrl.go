// Package ctrl is the contract between the workload-agent runtime (package agent) and the
// controllers it runs. It is a leaf package on purpose: a controller package imports ctrl (not
// agent), so that agent's registry (agent.Controllers) can import the controller packages without
// an import cycle.
//
// A controller registers informers in its InitFunc (by asking the factories in Context for the
// informers it needs), and the runtime starts the factories, waits for their caches and only then
// calls Run:
//
//	func Init(c *ctrl.Context) (ctrl.Controller, error) {
//		pods := c.ManagedInformers.Core().V1().Pods()     // only pods labelled managed-by=workload-agent
//		tapps := c.Informers.Apps().V1alpha1().TApps()
//		...
//		return &Controller{...}, nil
//	}
//
//	// Run blocks until ctx is done, then shuts its queue down and returns once its workers exit.
//	func (c *Controller) Run(ctx context.Context, workers int) { ... }
package ctrl

import (
	"context"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/typed/apis/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeinformers"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/fence"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
)

// Context is what a controller's InitFunc gets: clients, shared informer factories and the event
// recorder factory. Everything in it is shared by all controllers of the process; a controller
// must never mutate objects it gets from an informer cache (DeepCopy first).
//
// All informers strip metadata.managedFields from the objects they cache, so cached objects never
// carry managedFields. Updating such an object is safe: the API server keeps the stored
// managedFields when a request omits them.
type Context struct {
	// KubeClient is the client for native Kubernetes objects (protobuf, --qps/--burst).
	KubeClient kubeclient.Interface
	// Client is the client for the agent's own API group (apps.workload.dev).
	Client versioned.Interface
	// StatusClient is for the status writes of the agent's own kinds (UpdateStatus): the same
	// API group through a client budget of its own (--status-qps), so that status writes never
	// wait behind pod writes. Nil means Client (tests). Use Context.Statuses.
	StatusClient versioned.Interface
	// GatewayClient is the client for gateway.networking.k8s.io/v1 (HTTPRoutes a Canary routes
	// traffic through).
	GatewayClient gatewayclient.GatewayV1Interface
	// GatewayInformers is the shared factory for Gateway API objects, scoped to Namespace; nil
	// when the cluster serves no gateway.networking.k8s.io/v1 HTTPRoute (an informer of a
	// resource the server lacks would never sync and hold every controller back).
	GatewayInformers *kubeinformers.Factory

	// ManagedInformers is the shared factory (of the kinds the agent reads) for every native object the agent creates (Pods,
	// PersistentVolumeClaims, subset StatefulSets and Deployments, ControllerRevisions, canary
	// Deployments), scoped to Namespace and filtered by the label selector ManagedSelector
	// ("app.kubernetes.io/managed-by=workload-agent"): it only ever sees objects the agent
	// created. Objects the agent creates must carry that label or the agent will not see them.
	ManagedInformers *kubeinformers.Factory
	// ManagedSelector is the label selector ManagedInformers lists and watches with.
	ManagedSelector string
	// ReferencedInformers is the shared factory for the few native objects of the user's a
	// controller reads unfiltered (HorizontalPodAutoscalers), scoped to Namespace.
	ReferencedInformers *kubeinformers.Factory
	// Informers is the shared factory for TApps, UnitedDeployments and Canaries, scoped to
	// Namespace.
	Informers externalversions.SharedInformerFactory

	// EventRecorder returns a recorder that reports events as the given component (for example
	// "tapp-controller"). Events are sent to the API server asynchronously.
	EventRecorder func(component string) record.EventRecorder

	// Clock is the controllers' clock: clock.RealClock in the agent, a fake one in tests.
	Clock clock.Clock

	// Namespace is the namespace the agent is scoped to; empty means all namespaces.
	Namespace string
	// AgentNamespace is the namespace the agent runs in (its Lease's): where the notifications
	// controller reads its ConfigMap and Secret.
	AgentNamespace string
	// Fence is the agent's write fence. The API clients obey it already; a controller that
	// writes elsewhere (notifications over HTTP) sends through Fence.Transport.
	Fence *fence.Fence
	// Workers is the number of workers each controller should run (--workers). It is also passed
	// to Controller.Run.
	Workers int
	// ResyncPeriod is the factories' default resync period (0: no periodic resync).
	ResyncPeriod time.Duration
}

// Controller is one reconciler run by the agent.
type Controller interface {
	// Run starts workers and blocks until ctx is done. When ctx is done it shuts its work queue
	// down and returns once its workers have finished the items they were processing. It is
	// called only after every informer factory in Context has synced. Returning while ctx is
	// still live is treated as a fatal error by the runtime.
	Run(ctx context.Context, workers int)
}

// InitFunc constructs a controller. It must register every informer the controller uses (by
// calling Informer() or Lister() on the factories) and must not start them or block. Returning
// (nil, nil) means the controller chose not to run (it is skipped and logged).
type InitFunc func(*Context) (Controller, error)

// Statuses is the client for status writes: StatusClient, else Client.
func (c *Context) Statuses() versioned.Interface {
	if c.StatusClient != nil {
		return c.StatusClient
	}
	return c.Client
}
