package localcluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// GatewayAPIModule is the module whose standard-channel CRDs the harness installs. Its version is
// the one the repository's go.mod pins (the agent's typed client comes from the same module), so
// the CRDs in the cluster always match the types the agent was built with.
const GatewayAPIModule = "sigs.k8s.io/gateway-api"

// GatewayAPICRDDir returns config/crd/standard of the pinned gateway-api module in the module
// cache, downloading the module if needed. The YAML is read from the module rather than copied
// into the repository so that a version bump cannot leave a stale copy behind.
func GatewayAPICRDDir(ctx context.Context) (string, error) {
	dir, err := pinnedModuleDir(ctx, GatewayAPIModule)
	if err != nil {
		return "", fmt.Errorf("gateway API CRDs: %w", err)
	}
	return filepath.Join(dir, "config", "crd", "standard"), nil
}

// pinnedModuleDir returns the module cache directory of module at the version the repository's
// go.mod pins, downloading it if needed.
func pinnedModuleDir(ctx context.Context, module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = root
	if _, err := cmd.Output(); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", module, exitDetail(err))
	}
	cmd = exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, exitDetail(err))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: module not in the build list", module)
	}
	return dir, nil
}
