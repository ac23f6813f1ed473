// Package notifications proves the agent's notifications end to end: on the local control
// plane, with the canary and notifications controllers of a workload-agent process and an HTTP
// receiver started by the test standing for a webhook, Slack and Microsoft Teams, releases
// that pause, fail their analysis, roll back, complete, wait for a person, are aborted or miss
// their progress deadline are each announced exactly once; a receiver that fails is retried
// under a condition; a leader killed before it delivered leaves the delivery to the next one,
// which makes it once.
package notifications

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

func TestMain(m *testing.M) {
	localcluster.RunTestMain(m, localcluster.Options{CRDDir: localcluster.RepoPath("config", "crd")})
}
