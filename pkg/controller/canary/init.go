package canary

import "github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"

// Init is the agent's InitFunc for the Canary controller: Canaries from the agent's own
// factory, canary Deployments from the managed-by factory, and each Deployment a Canary names
// (its stable one) through a watch of that name only (WatchedDeployments), so that the agent
// caches no unrelated Deployment; Events as EventComponent. Targeted StatefulSets are watched
// by name too; targeted TApps are read from the agent's shared TApp informer.
//
// podHealth checks read the canary's pods from the agent's managed pod informer (the canary pod
// template carries the managed-by label), so no informer of every pod is needed.
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
	cc.WatchNamed(c.KubeClient)
	if err := cc.WatchUnitedDeployments(c.Informers.Apps().V1alpha1().UnitedDeployments()); err != nil {
		return nil, err
	}
	if err := cc.ReadTApps(c.Informers.Apps().V1alpha1().TApps()); err != nil {
		return nil, err
	}
	if c.GatewayInformers != nil {
		if err := cc.EnableTraffic(c.GatewayClient, c.GatewayInformers.Gateway().V1().HTTPRoutes()); err != nil {
			return nil, err
		}
	}
	pods := c.ManagedInformers.Core().V1().Pods()
	cc.SetPodLister(pods.Lister())
	cc.WaitFor(pods.Informer().HasSynced)
	return cc, nil
}
