package localcluster

import (
	"context"
	"fmt"
	"path/filepath"
)

// ClusterInventoryModule is the SIG-Multicluster module of the ClusterProfile API and its access
// library; its CRDs come from the version go.mod pins, as the Gateway API's do.
const ClusterInventoryModule = "sigs.k8s.io/cluster-inventory-api"

// ClusterInventoryCRDDir returns config/crd/bases of the pinned cluster-inventory-api module:
// ClusterProfile and PlacementDecision.
func ClusterInventoryCRDDir(ctx context.Context) (string, error) {
	dir, err := pinnedModuleDir(ctx, ClusterInventoryModule)
	if err != nil {
		return "", fmt.Errorf("cluster inventory CRDs: %w", err)
	}
	return filepath.Join(dir, "config", "crd", "bases"), nil
}
