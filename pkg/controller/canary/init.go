package canary

import "github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"

// Init is the agent's InitFunc for the Canary controller: Canaries from the agent's own
// factory, Deployments from the native factory (unfiltered, since stable Deployments carry none
// of the agent's labels), Events as EventComponent.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	return NewController(
		c.KubeClient,
		c.Client,
		c.Informers.Apps().V1alpha1().Canaries(),
		c.KubeInformers.Apps().V1().Deployments(),
		c.EventRecorder(EventComponent),
	)
}
