package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// BinDirEnv names the environment variable that points at a directory of
// prebuilt control plane binaries, bypassing the build cache.
const BinDirEnv = "KUBECTL_WORKLOAD_BIN_DIR"

// rootModule is the module whose go.mod marks the repository root; the tools
// module under hack/tools has a go.mod too and must not be mistaken for it.
const rootModule = "github.com/kubectl-workload/kubectl-workload"

// Binaries the control plane needs, as named in the bin directory.
var Binaries = []string{Etcd, APIServer, ControllerManager, Scheduler, Kwok}

// Component names, also the names of their binaries and log files.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
)

// RepoRoot returns the repository root, found by walking up from the working
// directory (a test's package directory) to the root module's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(data) == rootModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", rootModule)
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// RepoPath returns a path inside the repository, or "" if the repository
// root cannot be found.
func RepoPath(elem ...string) string {
	root, err := RepoRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// DefaultCRDDir returns the repository's config/crd directory if it exists,
// and "" otherwise.
func DefaultCRDDir() string {
	dir := RepoPath("config", "crd")
	if dir == "" {
		return ""
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// ResolveBinDir returns a directory holding every binary of the control
// plane. In order it tries: $KUBECTL_WORKLOAD_BIN_DIR, then the build cache
// named by hack/cluster/build-bins.sh, building what is missing there.
func ResolveBinDir(ctx context.Context, logf func(string, ...any)) (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" && missingBinaries(dir) == nil {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("control plane binaries: set %s or run inside the repository: %w", BinDirEnv, err)
	}
	script := filepath.Join(root, "hack", "cluster", "build-bins.sh")
	out, err := exec.CommandContext(ctx, "bash", script, "--print-dir").Output()
	if err != nil {
		return "", fmt.Errorf("%s --print-dir: %w", script, exitDetail(err))
	}
	dir := strings.TrimSpace(string(out))
	missing := missingBinaries(dir)
	if missing == nil {
		return dir, nil
	}
	logf("localcluster: building %s into %s (a cold build takes a long while; see docs/testing.md)", strings.Join(missing, ", "), dir)
	if err := runBuild(ctx, script); err != nil {
		return "", err
	}
	if missing := missingBinaries(dir); missing != nil {
		return "", fmt.Errorf("%s did not build %s", script, strings.Join(missing, ", "))
	}
	return dir, nil
}

// runBuild runs the build script in its own process group. It is not tied
// to this process's life: if `go test -timeout` kills the test binary during
// a cold build, the build still completes and the next run finds the
// binaries. Cancelling ctx (an interrupt) stops the build.
func runBuild(ctx context.Context, script string) error {
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building control plane binaries with %s: %w", script, err)
	}
	return nil
}

func missingBinaries(dir string) []string {
	var missing []string
	for _, b := range Binaries {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	return missing
}

func exitDetail(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}
