package promote

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// promote --subset works on subsets that name member clusters as on any other: it sets their
// partitions on the hub's UnitedDeployment (the agent writes them to the members); the line names
// each subset's cluster and says when one is out of reach. An unknown subset is refused, naming
// the subsets with their clusters.
func TestPromoteFleet(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	objs := func(reachable bool) []runtime.Object {
		u := cmdtest.FleetUnitedDeployment(now, true)
		u.Spec.UpdateStrategy.ManualUpdate.Partitions["zone-a"] = 1
		if reachable {
			cmdtest.FleetReachable(u, now)
		}
		return []runtime.Object{u}
	}
	for _, tt := range []struct {
		name      string
		reachable bool
		args      []string
	}{
		{"promote-fleet-subset-unreachable", false, []string{"ud/shop", "--subset", "us-1"}},
		{"promote-fleet-subset", true, []string{"ud/shop", "--subset", "us-1"}},
		{"promote-fleet-all", true, []string{"ud/shop", "--all"}},
		{"error-fleet-unknown-subset", true, []string{"ud/shop", "--subset", "eu-2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := cmdtest.Run(t, NewCmdPromote, objs(tt.reachable), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			if res.Code != 0 {
				cmdtest.AssertUnchanged(t, res, objs(tt.reachable))
				return
			}
			u, err := workload.AsUnitedDeployment(res.Stored(t, workload.UnitedDeployment.Resource, "shop"))
			if err != nil {
				t.Fatal(err)
			}
			if p := u.Spec.UpdateStrategy.ManualUpdate.Partitions; p["us-1"] != 0 {
				t.Errorf("stored partitions %v, want us-1 at 0", p)
			}
		})
	}
}
