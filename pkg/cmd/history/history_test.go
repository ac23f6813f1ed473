package history

import (
	"testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/history/historytest"
)

func TestHistory(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"ud", []string{"ud/orders"}},
		{"ud-type-name-form", []string{"ud", "orders"}},
		{"ud-no-revisions", []string{"ud/fresh"}},
		{"ud-revision", []string{"ud/orders", "--revision", "2"}},
		{"ud-json", []string{"ud/orders", "-o", "json"}},
		{"ud-no-revisions-json", []string{"ud/fresh", "-o", "json"}},
		{"statefulset", []string{"sts/db"}},
		{"statefulset-revision-yaml", []string{"sts/db", "--revision=1", "-o", "yaml"}},
		{"daemonset", []string{"ds/agents"}},
		{"daemonset-revision", []string{"daemonsets/agents", "--revision", "1"}},
		{"deployment", []string{"deploy/front"}},
		{"deployment-revision", []string{"deploy/front", "--revision", "2"}},
		{"tapp", []string{"tapp/web"}},
		{"tapp-yaml", []string{"tapp/web", "-o", "yaml"}},
		{"tapp-no-revisions", []string{"tapp/plain"}},
		{"tapp-pool-template", []string{"tapp/pooled"}},
		{"error-unknown-revision", []string{"ud/orders", "--revision", "5"}},
		{"error-bad-output", []string{"ud/orders", "-o", "wide"}},
		{"error-negative-revision", []string{"ud/orders", "--revision=-1"}},
		{"error-canary", []string{"canary/checkout"}},
		{"error-missing", []string{"sts/nope"}},
		{"error-no-args", nil},
		{"error-extra-args", []string{"ud/orders", "sts/db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdHistory, historytest.Objects(), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			// history only reads.
			cmdtest.AssertUnchanged(t, res, historytest.Objects())
		})
	}
}
