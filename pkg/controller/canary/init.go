package canary

import "github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"

// Init is the agent's InitFunc for the Canary controller: Canaries from the agent's own
// factory, canary Deployments from the managed-by factory, and each Deployment a Canary names
// (its stable one) through a watch of that name only (watchedDeployments), so that the agent
// caches no unrelated Deployment; Events as EventComponent. Targeted StatefulSets and DaemonSets
// are watched by name too; targeted TApps and UnitedDeployments are read from the agent's
// shared informers.
//
// podHealth checks read the canary's pods from the agent's managed pod informer (the canary pod
// template carries the managed-by label), so no informer of every pod is needed.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	cfg := Config{
		KubeClient:        c.KubeClient,
		Client:            c.Client,
		Canaries:          c.Informers.Apps().V1alpha1().Canaries(),
		Deployments:       c.ManagedInformers.Apps().V1().Deployments(),
		WatchByName:       true,
		UnitedDeployments: c.Informers.Apps().V1alpha1().UnitedDeployments(),
		TApps:             c.Informers.Apps().V1alpha1().TApps(),
		Pods:              c.ManagedInformers.Core().V1().Pods(),
		// Templates: every one in the cluster (people write few, and a Canary may name any).
		AnalysisTemplates:        c.Informers.Apps().V1alpha1().AnalysisTemplates(),
		ClusterAnalysisTemplates: c.Informers.Apps().V1alpha1().ClusterAnalysisTemplates(),
		Recorder:                 c.EventRecorder(EventComponent),
		Clock:                    c.Clock,
		HPAs:                     c.ReferencedInformers.Autoscaling().V2().HorizontalPodAutoscalers(),
	}
	if c.GatewayInformers != nil {
		cfg.Gateway, cfg.HTTPRoutes = c.GatewayClient, c.GatewayInformers.Gateway().V1().HTTPRoutes()
	}
	cc, err := NewController(cfg)
	if err != nil {
		return nil, err // not a nil *Controller in a non-nil interface
	}
	return cc, nil
}
