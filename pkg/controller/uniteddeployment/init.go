package uniteddeployment

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/base"
)

// EventComponent is the source component of the controller's Events.
var EventComponent = base.EventComponent(ControllerName)

// Init is the agent's InitFunc for the UnitedDeployment controller (see NewController).
func Init(c *ctrl.Context) (ctrl.Controller, error) {
	ctl, err := NewController(c)
	if err != nil {
		return nil, err
	}
	return ctl, nil
}
