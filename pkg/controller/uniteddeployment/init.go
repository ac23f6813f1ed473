package uniteddeployment

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
)

// Init constructs the controller for the agent (ctrl.InitFunc): StatefulSets, Deployments and
// ControllerRevisions from the native factory, pods from the managed-by factory, UnitedDeployments
// and TApps from ours.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	ctl, err := NewController(
		c.KubeClient,
		c.Client,
		c.Informers.Apps().V1alpha1().UnitedDeployments(),
		c.KubeInformers.Apps().V1().StatefulSets(),
		c.KubeInformers.Apps().V1().Deployments(),
		c.Informers.Apps().V1alpha1().TApps(),
		c.KubeInformers.Apps().V1().ControllerRevisions(),
		c.ManagedInformers.Core().V1().Pods(),
		c.EventRecorder(base.EventComponent(ControllerName)),
	)
	if err != nil {
		return nil, err
	}
	return ctl, nil
}
