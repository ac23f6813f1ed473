package rbac

import agentrbac "github.com/kubectl-workload/kubectl-workload/config/agent"

// allowList names the permissions of config/agent.Permissions that TestAgentRBAC does not see
// the agent use, each with the reason the test cannot reach the path that needs it. Everything
// else the agent is granted must show up in the audit log. Keep it short: a permission that
// can be exercised belongs in the test, not here.
var allowList = map[agentrbac.Key]string{
	{Group: "gateway.networking.k8s.io", Resource: "httproutes", Verb: "get"}:    "read only after a refused route patch, to tell someone else's edit from a failure: test/e2e/traffic provokes that edit, this test does not race the agent",
	{Group: "apps", Resource: "daemonsets", Verb: "list"}:                        "the named watch of a targeted DaemonSet streams its initial list (WatchListClient) and lists the classic way only against an API server that does not stream lists or after some watch errors; the second agent, which lists that way, syncs no Canary before it stops",
	{Group: "multicluster.x-k8s.io", Resource: "clusterprofiles", Verb: "list"}:  "the agent watches ClusterProfiles only when the hub serves them; this test's cluster has no cluster manager (test/e2e/fleet runs a hub with ClusterProfiles)",
	{Group: "multicluster.x-k8s.io", Resource: "clusterprofiles", Verb: "watch"}: "as list: no ClusterProfiles on this test's cluster",
}
