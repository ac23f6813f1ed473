package notifications

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
)

// Init is the agent's InitFunc: Canaries from the agent's shared informer (no informer of its
// own: the ConfigMap, the Secret and a Canary's namespace are read when something is to be
// sent), the ConfigMap and Secret of the agent's namespace, sends through the agent's write
// fence.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	var fence Fence
	if c.Fence != nil {
		fence = c.Fence
	}
	return NewController(c.KubeClient, c.Client, c.Informers.Apps().V1alpha1().Canaries(),
		c.EventRecorder(base.EventComponent(ControllerName)), c.AgentNamespace, fence)
}
