// Package agent is the workload-agent runtime: it builds the API clients, the shared informer
// factories and the event broadcaster, runs leader election on a Lease, serves /healthz, /readyz
// and /metrics, and runs the registered controllers (see Controllers) once their caches have
// synced. cmd/agent is a thin command line around Run.
package agent

import "github.com/kubectl-workload/kubectl-workload/pkg/agent/ctrl"

// Context is what a controller's InitFunc gets; see ctrl.Context.
type Context = ctrl.Context

// Controller is one reconciler run by the agent; see ctrl.Controller.
type Controller = ctrl.Controller

// InitFunc constructs a controller; see ctrl.InitFunc.
type InitFunc = ctrl.InitFunc
