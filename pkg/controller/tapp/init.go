package tapp

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
)

// EventComponent is the source component of the controller's Events.
var EventComponent = base.EventComponent(ControllerName)

// Init is the agent's InitFunc for the TApp controller: TApps from the agent's own factory, pods,
// PVCs and ControllerRevisions from the managed-by filtered factory (every pod, claim and
// revision the controller creates carries that label), Events as EventComponent.
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	return NewController(
		c.KubeClient,
		c.Client,
		c.Informers.Apps().V1alpha1().TApps(),
		c.ManagedInformers.Core().V1().Pods(),
		c.ManagedInformers.Core().V1().PersistentVolumeClaims(),
		c.ManagedInformers.Apps().V1().ControllerRevisions(),
		c.EventRecorder(EventComponent),
	), nil
}
