package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// A UnitedDeployment over member clusters names each member subset's cluster; one out of reach
// says why, and its counts are the last seen, so the rollout is never complete or held while it
// is away. A Canary releasing it cluster by cluster names each step's clusters, and the member
// that holds the current step.
func TestStatusFleet(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	defer func(f func() time.Time) { workload.Now = f }(workload.Now)
	workload.Now = func() time.Time { return now }
	reachable := cmdtest.FleetUnitedDeployment(now, false)
	cmdtest.FleetReachable(reachable, now)
	passed := cmdtest.FleetCanary(now)
	passed.Status.Phase, passed.Status.Batches[1].State = v1alpha1.CanaryProgressing, v1alpha1.BatchBaking
	for _, tt := range []struct {
		name string
		objs []runtime.Object
		args []string
	}{
		{"fleet-ud-unreachable", []runtime.Object{cmdtest.FleetUnitedDeployment(now, false)}, []string{"ud/shop"}},
		{"fleet-ud-reachable-held", []runtime.Object{reachable}, []string{"ud/shop"}},
		{"fleet-canary-held-by-cluster", []runtime.Object{cmdtest.FleetUnitedDeployment(now, false), cmdtest.FleetCanary(now)}, []string{"canary/shop"}},
		{"fleet-canary-waves", []runtime.Object{reachable, passed}, []string{"canary/shop"}},
		// Without its UnitedDeployment the Canary's status is as before, without clusters.
		{"fleet-canary-target-missing", []runtime.Object{cmdtest.FleetCanary(now)}, []string{"canary/shop"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdStatus, tt.objs, tt.args...)
			cmdtest.Golden(t, tt.name, transcript(res))
		})
	}
}
