package canary

import (
	"strings"
	"testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// A Canary over a UnitedDeployment whose member clusters are all unreachable (0 of 6 pods
// counted) is not Completed: it is Progressing, naming the clusters, and Completed once they are
// back with every pod available.
func TestUnitedDeploymentCanaryNotCompletedWhileUnreachable(t *testing.T) {
	cn := zonesCanary()
	r, _ := syncZones(t, cn, clusterZones(nil, 6, "v1", "v1", "a", "b", "c"))
	if cn.Status.Phase != v1alpha1.CanaryProgressing {
		t.Fatalf("every cluster unreachable: phase %s (%s), want Progressing", cn.Status.Phase, r.message)
	}
	for _, c := range []string{"fleet/a", "fleet/b", "fleet/c"} {
		if !strings.Contains(cn.Status.Message, "cluster "+c) {
			t.Errorf("message %q does not name cluster %s", cn.Status.Message, c)
		}
	}
	if !strings.Contains(cn.Status.Message, "0 of 6 pods available") {
		t.Errorf("message %q does not count the pods", cn.Status.Message)
	}
	syncZones(t, cn, clusterZones(nil, 6, "v1", "v1"))
	if cn.Status.Phase != v1alpha1.CanaryCompleted {
		t.Fatalf("clusters back: phase %s (%s), want Completed", cn.Status.Phase, cn.Status.Message)
	}
	syncZones(t, cn, clusterZones(nil, 6, "v1", "v1", "b"))
	if cn.Status.Phase != v1alpha1.CanaryProgressing || !strings.Contains(cn.Status.Message, "cluster fleet/b") {
		t.Fatalf("cluster b unreachable after completion: phase %s (%s), want Progressing naming it", cn.Status.Phase, cn.Status.Message)
	}
}

// After its last step, a release whose target has not every pod available yet waits for them.
func TestTargetCanaryCompletedOnlyWhenAvailable(t *testing.T) {
	cn := zonesCanary()
	syncZones(t, cn, zones(nil, 6, "v1", "v1"))
	cn.Status.Phase = v1alpha1.CanaryProgressing // a release under way ran its steps
	cn.Status.CurrentBatch = 3
	ud := zones(nil, 6, "v2", "v2")
	ud.Status.ReadyReplicas = 4
	syncZones(t, cn, ud)
	if cn.Status.Phase != v1alpha1.CanaryProgressing || !strings.Contains(cn.Status.Message, "all 3 steps released") {
		t.Fatalf("4 of 6 ready: phase %s (%s), want Progressing", cn.Status.Phase, cn.Status.Message)
	}
	syncZones(t, cn, zones(nil, 6, "v2", "v2"))
	if cn.Status.Phase != v1alpha1.CanaryCompleted {
		t.Fatalf("6 of 6 ready: phase %s (%s), want Completed", cn.Status.Phase, cn.Status.Message)
	}
}
