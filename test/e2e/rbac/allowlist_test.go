package rbac

import agentrbac "github.com/kubectl-workload/kubectl-workload/config/agent"

// allowList names the permissions of config/agent.Permissions that TestAgentRBAC does not see
// the agent use, each with the reason the test cannot reach the path that needs it. Everything
// else the agent is granted must show up in the audit log. Keep it short: a permission that
// can be exercised belongs in the test, not here.
var allowList = map[agentrbac.Key]string{
	{Group: "gateway.networking.k8s.io", Resource: "httproutes", Verb: "get"}: "read only after a refused route patch, to tell someone else's edit from a failure: test/e2e/traffic provokes that edit, this test does not race the agent",
}
