// Package fleet tests fleet releases end to end on four control planes: a hub, where the
// workload-agent runs and reads ClusterProfiles, and three members with kube-controller-manager,
// kube-scheduler, kwok and the project's CRDs, all stored in the hub's etcd under a prefix each.
// The test is the cluster manager (test/clustermanager): it publishes a ClusterProfile per member
// and the credential plugin that gives the agent a namespace-scoped identity in each.
package fleet

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/clustermanager"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

// members are the member clusters' names, which are also their ClusterProfiles'.
var members = []string{"member-1", "member-2", "member-3"}

func TestMain(m *testing.M) {
	localcluster.RunFleetTestMain(m, localcluster.FleetOptions{
		Hub:     localcluster.Options{CRDDir: localcluster.DefaultCRDDir()},
		Members: members,
		// Two nodes in two zones a member: a subset may select a zone inside its cluster, and
		// fewer nodes are fewer heartbeats for kwok to write on a shared machine.
		Member: localcluster.Options{CRDDir: localcluster.DefaultCRDDir(), Nodes: memberNodes()},
	})
}

func memberNodes() []localcluster.Node {
	var nodes []localcluster.Node
	for _, zone := range localcluster.Zones[:2] {
		nodes = append(nodes, localcluster.Node{Name: "kwok-" + zone, Zone: zone})
	}
	return nodes
}

var (
	managerOnce sync.Once
	manager     *clustermanager.Manager
	managerErr  error
)

// fleet returns the shared fleet and its cluster manager, which registers every member once
// for the package (its files live in the hub's directory, removed with the fleet).
func fleet(t *testing.T) (*localcluster.Fleet, *clustermanager.Manager) {
	t.Helper()
	f := localcluster.SharedFleet(t)
	managerOnce.Do(func() {
		ctx := context.Background()
		if manager, managerErr = clustermanager.New(ctx, f.Hub, filepath.Join(f.Hub.Dir, "clustermanager")); managerErr != nil {
			return
		}
		for _, name := range f.Names {
			if managerErr = manager.Register(ctx, name, f.Member(name)); managerErr != nil {
				return
			}
		}
	})
	if managerErr != nil {
		t.Fatalf("cluster manager: %v", managerErr)
	}
	return f, manager
}
