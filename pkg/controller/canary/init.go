package canary

import "github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"

// Init is the agent's InitFunc for the Canary controller: Canaries from the agent's own
// factory, Deployments from the native factory (unfiltered, since stable Deployments carry none
// of the agent's labels), Events as EventComponent.
//
// podHealth checks read the canary's pods from the agent's managed pod informer (the canary pod
// template carries the managed-by label), so no informer of every pod is needed.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	cc, err := NewController(
		c.KubeClient,
		c.Client,
		c.Informers.Apps().V1alpha1().Canaries(),
		c.KubeInformers.Apps().V1().Deployments(),
		c.EventRecorder(EventComponent),
	)
	if err != nil {
		return nil, err
	}
	pods := c.ManagedInformers.Core().V1().Pods()
	cc.SetPodLister(pods.Lister())
	cc.WaitFor(pods.Informer().HasSynced)
	return cc, nil
}
