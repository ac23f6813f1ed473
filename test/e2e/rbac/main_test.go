// Package rbac proves the agent's RBAC end to end: on the local control plane with an audit log
// and the OwnerReferencesPermissionEnforcement admission plugin, it applies config/agent's
// ServiceAccount, ClusterRole, Role and bindings (as `kubectl workload install` does, without
// the Deployment), runs the workload-agent binary as that ServiceAccount (a TokenRequest token in
// a kubeconfig of its own), and drives every controller through its paths. Then it reads what
// the agent did from the audit log and checks that
//
//   - the API server never refused the agent (no 403), and
//   - the permissions the agent used are exactly config/agent.Permissions (which
//     config/agent/permissions_test.go checks against the manifests), but for the allow-list of
//     allowlist_test.go: permissions needed only on paths this test cannot reach, each with the
//     reason.
//
// The */finalizers permissions are checked by admission, not requested: the test derives their
// use from the owner references of what the agent created (see usedPermissions).
package rbac

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// auditPolicy records the agent's requests only: with their request body for creates (the owner
// references tell which */finalizers permission admission checked), at the Metadata level for
// the rest. ResponseStarted is kept: a watch's ResponseComplete comes only when it ends.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  users: ["` + agentUser + `"]
  verbs: ["create"]
- level: Metadata
  users: ["` + agentUser + `"]
- level: None
`

// auditLogName is the audit log's name in the cluster's log directory.
const auditLogName = localcluster.AuditLogName

func TestMain(m *testing.M) {
	// Creating an object with a blocking owner reference then needs update on the owner's
	// finalizers subresource, as on clusters that enable it (OpenShift, some hardened
	// distributions): a missing */finalizers grant is a 403 here too.
	localcluster.RunAuditedTestMain(m, localcluster.Options{CRDDir: localcluster.DefaultCRDDir(), GatewayAPI: true}, nil, auditPolicy,
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement")
}
