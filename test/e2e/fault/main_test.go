// Package fault disturbs the agent and the control plane in the middle of rollouts and checks,
// with an invariant watcher (package invariant) running all along, that nothing breaks: the
// leader frozen past its Lease and continued (and, from the API server's audit log, that the old
// leader wrote nothing once the new one had written), kube-apiserver and etcd restarted in place
// mid-rollout of each kind, and the agent's watches expired by an etcd compaction. With the
// build tag chaos it also holds TestChaos, the freeze/kill scenario `make chaos` repeats.
package fault

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
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

const auditLogName = "audit.log"

var auditLog string

func TestMain(m *testing.M) {
	flag.Parse()
	opts := localcluster.Options{CRDDir: localcluster.DefaultCRDDir()}
	if !testing.Short() {
		// The harness removes this directory when it stops the cluster (Options.Dir).
		dir, err := os.MkdirTemp("", "kubectl-workload-cluster-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		policy := filepath.Join(dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		auditLog = filepath.Join(dir, "logs", auditLogName)
		opts.Dir = dir
		opts.ExtraFlags = map[string][]string{localcluster.APIServer: {
			"--audit-policy-file=" + policy,
			"--audit-log-path=" + auditLog,
			"--audit-log-format=json",
			// Written before the response: once a wait ends, every request before it is in the log.
			"--audit-log-mode=blocking",
			"--audit-log-maxsize=0",
			"--audit-log-maxbackup=0",
		}}
	}
	localcluster.RunTestMain(m, opts)
}
