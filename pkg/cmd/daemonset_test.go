package cmd

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/abort"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/instance"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/pause"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/promote"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/retry"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/setpartition"
)

// A DaemonSet has no pause switch, no partition, no batches of its own and no instances: the
// verbs for those refuse it in one line that names what they work on, before reading anything.
// (A Canary with spec.targetRef releases a DaemonSet step by step; promote and abort act on it.)
func TestVerbsWithoutMeaningForADaemonSetRefuseIt(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agents", Namespace: cmdtest.Namespace, Generation: 2}}
	ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
	objs := []runtime.Object{ds}
	for _, v := range []struct {
		name   string
		newCmd cmdtest.NewCmd
		args   []string
		allows string
	}{
		{"pause", pause.NewCmdPause, nil, "tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment)"},
		{"resume", pause.NewCmdResume, nil, "tapp (TApp), ud (UnitedDeployment), canary (Canary), deploy (Deployment)"},
		{"promote", promote.NewCmdPromote, nil, "canary (Canary), ud (UnitedDeployment)"},
		{"abort", abort.NewCmdAbort, nil, "canary (Canary)"},
		{"retry", retry.NewCmdRetry, nil, "canary (Canary)"},
		{"set-partition", setpartition.NewCmdSetPartition, []string{"1"}, "tapp (TApp), sts (StatefulSet), ud (UnitedDeployment)"},
		{"kill-instance", instance.NewCmdKillInstance, []string{"1"}, "tapp (TApp)"},
		{"start-instance", instance.NewCmdStartInstance, []string{"1"}, "tapp (TApp)"},
	} {
		t.Run(v.name, func(t *testing.T) {
			res := cmdtest.Run(t, v.newCmd, objs, append([]string{"ds/agents"}, v.args...)...)
			want := "error: ds/agents: this command does not work on a DaemonSet; it works on " + v.allows
			if res.Code == 0 || res.Fatal != want || strings.Contains(res.Fatal, "\n") {
				t.Errorf("exit %d, %q; want a non-zero exit and %q", res.Code, res.Fatal, want)
			}
			if len(res.Actions) > 0 {
				t.Errorf("sent %v; want nothing sent", res.Actions)
			}
			cmdtest.AssertUnchanged(t, res, objs)
		})
	}
}
