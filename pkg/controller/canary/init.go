package canary

import "github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"

// Init is the agent's InitFunc for the Canary controller: Canaries from the agent's own
// factory; the Deployments Canaries name watched one by one by name (a stable Deployment carries
// none of the agent's labels) and the canary Deployments the controller created from the
// managed-by factory, so that no informer caches unrelated Deployments; Events as
// EventComponent.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	cc, err := NewController(
		c.KubeClient,
		c.Client,
		c.Informers.Apps().V1alpha1().Canaries(),
		c.ManagedInformers.Apps().V1().Deployments(),
		c.EventRecorder(EventComponent),
	)
	if err != nil {
		return nil, err
	}
	cc.WatchByName(c.Transform)
	return cc, nil
}
