package canary

import "github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"

// Init is the agent's InitFunc for the Canary controller: Canaries from the agent's own
// factory, canary Deployments from the managed-by factory, and each Deployment a Canary names
// (its stable one) through a watch of that name only (watchedDeployments), so that the agent
// caches no unrelated Deployment; Events as EventComponent. Targeted StatefulSets and DaemonSets
// are watched by name too; targeted TApps and UnitedDeployments are read from the agent's
// shared informers.
//
// The canary's pods are in no cache of the agent (its managed pod informer leaves out the
// pods labelled apps.workload.dev/canary): nothing the Canary decides reads them, so their
// events cost nothing; podHealth checks list them from the API server when they measure.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	cfg := Config{
		KubeClient:        c.KubeClient,
		Client:            c.Client,
		Canaries:          c.Informers.Apps().V1alpha1().Canaries(),
		Deployments:       c.ManagedInformers.Deployments(),
		WatchByName:       true,
		UnitedDeployments: c.Informers.Apps().V1alpha1().UnitedDeployments(),
		TApps:             c.Informers.Apps().V1alpha1().TApps(),
		// Templates: every one in the cluster (people write few, and a Canary may name any).
		AnalysisTemplates:        c.Informers.Apps().V1alpha1().AnalysisTemplates(),
		ClusterAnalysisTemplates: c.Informers.Apps().V1alpha1().ClusterAnalysisTemplates(),
		Recorder:                 c.EventRecorder(EventComponent),
		Clock:                    c.Clock,
		ProgressInterval:         ProgressInterval,
		StableFollowsWholeSteps:  true,
		HPAs:                     c.ReferencedInformers.HorizontalPodAutoscalers(),
	}
	if c.GatewayInformers != nil {
		cfg.Gateway, cfg.HTTPRoutes = c.GatewayClient, c.GatewayInformers.HTTPRoutes(c.GatewayClient)
	}
	cc, err := NewController(cfg)
	if err != nil {
		return nil, err // not a nil *Controller in a non-nil interface
	}
	return cc, nil
}
