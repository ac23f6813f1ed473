package agent

import (
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/canary"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/notifications"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/tapp"
	"github.com/kubectl-workload/kubectl-workload/pkg/controller/uniteddeployment"
)

// Controllers is the registry of the controllers the agent runs, by name (the names --controllers
// accepts). Controller packages implement ctrl.InitFunc (importing
// github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl, never this package, which would be
// an import cycle) and are added here, for example:
//
//	var Controllers = map[string]InitFunc{
//		"tapp": tapp.Init,
//	}
//
// Controllers are constructed and started in name order.
var Controllers = map[string]InitFunc{
	"canary":           canary.Init,
	"notifications":    notifications.Init,
	"tapp":             tapp.Init,
	"uniteddeployment": uniteddeployment.Init,
}
