// Package krewinstall installs the plugin with the real krew (hack/tools/krew), as the README
// says: make krew-install on this machine, and shows why an archive of another platform cannot
// be installed with --archive (docs/distribution.md, krew). No cluster: krew and the plugin's
// version need none.
package krewinstall

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
)

// krewBinary builds krew from its pinned module into the cache, once per pin (as hack/verify.sh
// builds actionlint).
func krewBinary(t *testing.T, root string) string {
	t.Helper()
	sum, err := os.ReadFile(filepath.Join(root, "hack", "tools", "krew", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(sum)
	cache := os.Getenv("KUBECTL_WORKLOAD_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(dir, "kubectl-workload")
	}
	bin := filepath.Join(cache, "tools", "krew-"+hex.EncodeToString(h[:])[:12], "krew")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	t.Logf("building krew into %s (hack/tools/krew)", bin)
	cmd := exec.Command("go", "build", "-o", bin, "sigs.k8s.io/krew/cmd/krew")
	cmd.Dir = filepath.Join(root, "hack", "tools", "krew")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build krew: %v\n%s", err, out)
	}
	return bin
}

// krewEnv is the module's root and an environment with kubectl and krew (as the kubectl plugin
// kubectl-krew) on PATH, krew's root in a temporary directory and its check for a newer krew (a
// network call) off.
func krewEnv(t *testing.T) (root string, env []string, krewRoot string) {
	t.Helper()
	root, err := agentproc.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(krewBinary(t, root), filepath.Join(bin, "kubectl-krew")); err != nil {
		t.Fatal(err)
	}
	krewRoot = t.TempDir()
	path := strings.Join([]string{filepath.Join(krewRoot, "bin"), bin, filepath.Dir(pluginexec.Kubectl(t)), os.Getenv("PATH")}, string(os.PathListSeparator))
	return root, append(os.Environ(), "PATH="+path, "KREW_ROOT="+krewRoot, "KREW_NO_UPGRADE_CHECK=1"), krewRoot
}

func run(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out), err
}

// make krew-install builds this machine's archive and manifest and installs them with krew: the
// plugin is then on krew's PATH and runs.
func TestMakeKrewInstall(t *testing.T) {
	root, env, krewRoot := krewEnv(t)
	dir := t.TempDir()
	if _, err := run(t, root, env, "make", "krew-install", "KREW_INSTALL_DIR="+dir); err != nil {
		t.Fatalf("make krew-install: %v", err)
	}
	if _, err := os.Stat(filepath.Join(krewRoot, "bin", "kubectl-workload")); err != nil {
		t.Fatalf("krew did not link the plugin: %v", err)
	}
	// The binary krew installed, found by kubectl on krew's PATH, is the one make dist built.
	out, err := run(t, root, env, "kubectl", "workload", "version")
	if err != nil || !strings.HasPrefix(out, "kubectl-workload v") {
		t.Errorf("kubectl workload version after krew install: %v: %q", err, out)
	}
}

// krew checks an archive given with --archive against the manifest's platform of the machine it
// runs on: another platform's archive fails with "checksum does not match", which is why each
// platform installs its own.
func TestKrewRefusesAnotherPlatformsArchive(t *testing.T) {
	root, env, _ := krewEnv(t)
	dist := t.TempDir()
	host := runtime.GOOS + "/" + runtime.GOARCH
	other := "linux/arm64"
	if host == other {
		other = "linux/amd64"
	}
	// The host's archive holds the real binary; the other's a stand-in: the archives only need
	// to differ, as two platforms' do.
	bins := map[string]string{host: filepath.Join(t.TempDir(), "kubectl-workload"), other: filepath.Join(t.TempDir(), "kubectl-workload")}
	if _, err := run(t, root, env, "go", "build", "-o", bins[host], "./cmd/kubectl-workload"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bins[other], []byte("a stand-in for "+other+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{host, other} {
		goos, arch, _ := strings.Cut(p, "/")
		if _, err := run(t, root, env, "go", "run", "./hack/release", "archive", "-os", goos, "-arch", arch, "-version", "v0.1.0", "-bin", bins[p], "-out", dist); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run(t, root, env, "go", "run", "./hack/release", "krew", "-version", "v0.1.0", "-dist", dist, "-base-url", "https://example.com",
		"-template", "krew.yaml", "-out", filepath.Join(dist, "workload.yaml"), "-platforms", host+" "+other); err != nil {
		t.Fatal(err)
	}
	archive := func(p string) string {
		goos, arch, _ := strings.Cut(p, "/")
		ext := ".tar.gz"
		if goos == "windows" {
			ext = ".zip"
		}
		return filepath.Join(dist, "kubectl-workload_v0.1.0_"+goos+"_"+arch+ext)
	}
	out, err := run(t, root, env, "kubectl", "krew", "install", "--manifest="+filepath.Join(dist, "workload.yaml"), "--archive="+archive(other))
	if err == nil || !strings.Contains(out, "checksum does not match") {
		t.Errorf("krew installed %s's archive on %s: %v", other, host, err)
	}
	if _, err := run(t, root, env, "kubectl", "krew", "install", "--manifest="+filepath.Join(dist, "workload.yaml"), "--archive="+archive(host)); err != nil {
		t.Errorf("krew refused %s's own archive: %v", host, err)
	}
}
