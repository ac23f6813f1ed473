// Package fault disturbs the agent and the control plane in the middle of rollouts and checks,
// with an invariant watcher (package invariant) running all along, that nothing breaks: the
// leader frozen past its Lease and continued (and, from the API server's audit log, that the old
// leader wrote nothing once the new one had written), kube-apiserver and etcd restarted in place
// mid-rollout of each kind, and the agent's watches expired by an etcd compaction. With the
// build tag chaos it also holds TestChaos, the freeze/kill scenario `make chaos` repeats.
package fault

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// auditPolicy records every write (the fencing check), list and watch (relists after an expired
// watch: client-go lists through a watch with sendInitialEvents=true), at the Metadata level: who,
// which User-Agent, which object, when, which answer. A watch is recorded when it starts.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["get"]
- level: None
  namespaces: ["kube-node-lease"]
- level: Metadata
  verbs: ["watch"]
- level: Metadata
  omitStages: ["ResponseStarted"]
`

var auditLog string

func TestMain(m *testing.M) {
	localcluster.RunAuditedTestMain(m, localcluster.Options{CRDDir: localcluster.DefaultCRDDir()}, &auditLog, auditPolicy)
}
