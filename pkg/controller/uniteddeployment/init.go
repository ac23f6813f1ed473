package uniteddeployment

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
)

// Init constructs the controller for the agent (ctrl.InitFunc): UnitedDeployments and TApps from
// ours; StatefulSets, Deployments, ControllerRevisions and pods from the managed-by filtered
// factory, since every subset workload, revision and pod the controller creates carries that
// label (workloadLabels, revisionPlan.plan, preparePodTemplate): the agent's memory does not grow
// with the cluster's other StatefulSets, Deployments and revisions.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	ctl, err := NewController(
		c.KubeClient,
		c.Client,
		c.ManagedInformers,
		c.Informers,
		c.ManagedInformers.Core().V1().Pods(),
		c.EventRecorder(base.EventComponent(ControllerName)),
	)
	if err != nil {
		return nil, err
	}
	return ctl, nil
}
