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
		c.KubeInformers,
		c.Informers,
		c.ManagedInformers.Core().V1().Pods(),
		c.EventRecorder(base.EventComponent(ControllerName)),
	)
	if err != nil {
		return nil, err
	}
	return ctl, nil
}
