package uniteddeployment

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
)

// Init constructs the controller for the agent (ctrl.InitFunc): UnitedDeployments and TApps from
// our factory; StatefulSets, Deployments, ControllerRevisions and pods from the managed-by
// filtered factory, since every subset workload, revision and pod the controller creates carries
// that label (workloadLabels, syncRevisions, preparePodTemplate), so the agent's memory does not
// grow with the cluster's other StatefulSets, Deployments and revisions.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	ctl, err := NewController(
		c.KubeClient,
		c.Client,
		c.Informers.Apps().V1alpha1().UnitedDeployments(),
		c.ManagedInformers.Apps().V1().StatefulSets(),
		c.ManagedInformers.Apps().V1().Deployments(),
		c.Informers.Apps().V1alpha1().TApps(),
		c.ManagedInformers.Apps().V1().ControllerRevisions(),
		c.ManagedInformers.Core().V1().Pods(),
		c.EventRecorder(ComponentName),
	)
	if err != nil {
		return nil, err
	}
	return ctl, nil
}
