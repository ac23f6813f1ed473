// Package imagetest checks the agent image `make image` built: the OCI layout it wrote, read with
// go-containerregistry, against config/agent/deployment.yaml and the plugin built from the same
// tree. `make test` builds both first and runs it (make test-image).
package imagetest

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"sigs.k8s.io/yaml"
)

const repoRoot = "../../../.."

// The platforms the image is published for, and the ELF machine of each.
var platforms = map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}

// fromEnv is a path given by make test, else its default under the repository root.
func fromEnv(t *testing.T, env, def string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = filepath.Join(repoRoot, def)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (make test builds it: make image build)", p, err)
	}
	return p
}

// container is what the test reads of the agent's Deployment.
type container struct {
	Command []string `json:"command"`
	Ports   []struct {
		ContainerPort int    `json:"containerPort"`
		Protocol      string `json:"protocol"`
	} `json:"ports"`
}

type deployment struct {
	Spec struct {
		Template struct {
			Spec struct {
				SecurityContext struct {
					RunAsUser  *int64 `json:"runAsUser"`
					RunAsGroup *int64 `json:"runAsGroup"`
				} `json:"securityContext"`
				Containers []container `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

func readDeployment(t *testing.T) deployment {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "agent", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d deployment
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.SecurityContext.RunAsUser == nil {
		t.Fatal("deployment.yaml: want one container and a pod runAsUser")
	}
	return d
}

// pluginVersion is the version and commit `kubectl-workload version -o json` reports.
func pluginVersion(t *testing.T) (version, commit string) {
	t.Helper()
	out, err := exec.Command(fromEnv(t, "PLUGIN", "bin/kubectl-workload"), "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl-workload version: %v", err)
	}
	var v struct{ Version, GitCommit string }
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v.Version, v.GitCommit
}

// images are the layout's images by platform: the layout holds one index (the multi-platform
// image), whose manifests name their platforms.
func images(t *testing.T) map[string]v1.Image {
	t.Helper()
	p, err := layout.FromPath(fromEnv(t, "IMAGE_LAYOUT", "bin/image"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || !tm.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("the layout holds %d entries, want one multi-platform index", len(tm.Manifests))
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Image{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s names no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		out[d.Platform.OS+"/"+d.Platform.Architecture] = img
	}
	return out
}

// fileIn reads a file from the image's layers, the top layer first.
func fileIn(img v1.Image, path string) ([]byte, *tar.Header, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, err
	}
	want := strings.TrimPrefix(path, "/")
	for i := len(layers) - 1; i >= 0; i-- {
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return nil, nil, err
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return nil, nil, err
			}
			if strings.TrimPrefix(hdr.Name, "./") == want || strings.TrimPrefix(hdr.Name, "/") == want {
				data, err := io.ReadAll(tr)
				rc.Close()
				return data, hdr, err
			}
		}
		rc.Close()
	}
	return nil, nil, errors.New(path + ": not in the image")
}

// Each platform's image runs as the Deployment's non-root user, exposes the ports the
// Deployment's container declares, starts the agent binary for that platform, static, stamped
// with the plugin's version and commit.
func TestAgentImage(t *testing.T) {
	d := readDeployment(t)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if len(c.Command) > 0 {
		t.Errorf("the Deployment's command %v overrides the image's entrypoint", c.Command)
	}
	var wantPorts []string
	for _, p := range c.Ports {
		wantPorts = append(wantPorts, strconv.Itoa(p.ContainerPort)+"/"+strings.ToLower(p.Protocol))
	}
	sort.Strings(wantPorts)
	wantUser := strconv.FormatInt(*pod.SecurityContext.RunAsUser, 10)
	if pod.SecurityContext.RunAsGroup != nil {
		wantUser += ":" + strconv.FormatInt(*pod.SecurityContext.RunAsGroup, 10)
	}
	version, commit := pluginVersion(t)

	imgs := images(t)
	var got []string
	for p := range imgs {
		got = append(got, p)
	}
	sort.Strings(got)
	if !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", got)
	}
	for platform, img := range imgs {
		t.Run(strings.ReplaceAll(platform, "/", "-"), func(t *testing.T) {
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OS+"/"+cfg.Architecture != platform {
				t.Errorf("the config says %s/%s", cfg.OS, cfg.Architecture)
			}
			if cfg.Config.User != wantUser || wantUser == "0" || strings.HasPrefix(wantUser, "0:") {
				t.Errorf("user %q, the Deployment runs as %q (numeric and non-root, for runAsNonRoot)", cfg.Config.User, wantUser)
			}
			var ports []string
			for p := range cfg.Config.ExposedPorts {
				ports = append(ports, p)
			}
			sort.Strings(ports)
			if !slices.Equal(ports, wantPorts) {
				t.Errorf("exposed ports %v, the Deployment's container ports %v", ports, wantPorts)
			}
			if got := cfg.Config.Labels["org.opencontainers.image.version"]; got != version {
				t.Errorf("label org.opencontainers.image.version %q, the plugin's version %q", got, version)
			}
			if len(cfg.Config.Entrypoint) != 1 {
				t.Fatalf("entrypoint %v, want the agent binary alone", cfg.Config.Entrypoint)
			}
			checkBinary(t, img, cfg.Config.Entrypoint[0], platform, version, commit)
			passwd, _, err := fileIn(img, "/etc/passwd")
			if err != nil {
				t.Fatal(err)
			}
			uid, _, _ := strings.Cut(wantUser, ":")
			if !strings.Contains(string(passwd), ":x:"+uid+":") {
				t.Errorf("/etc/passwd has no user %s:\n%s", uid, passwd)
			}
		})
	}
}

// checkBinary checks the entrypoint: an executable static ELF for the platform, built from
// cmd/agent with the plugin's version and commit; on the test's own platform it is run and must
// report them.
func checkBinary(t *testing.T, img v1.Image, path, platform, version, commit string) {
	t.Helper()
	data, hdr, err := fileIn(img, path)
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Mode&0o111 == 0 {
		t.Errorf("%s is not executable (mode %o)", path, hdr.Mode)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if f.Machine != platforms[platform] {
		t.Errorf("%s is built for %v", path, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked (%v): it cannot run on distroless/static", path, p.Type)
		}
	}
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != "github.com/kubectl-workload/kubectl-workload/cmd/agent" {
		t.Errorf("%s is built from %s, want cmd/agent", path, info.Path)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	goarch := strings.TrimPrefix(platform, "linux/")
	if settings["GOOS"] != "linux" || settings["GOARCH"] != goarch || settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("%s: build settings %v, want GOOS=linux GOARCH=%s CGO_ENABLED=0 -trimpath", path, settings, goarch)
	}
	// -trimpath keeps -ldflags out of the build info; the -X values are strings of the binary.
	for _, want := range []string{version, commit} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("%s does not hold %q: not stamped with the plugin's version and commit", path, want)
		}
	}
	if platform != runtime.GOOS+"/"+runtime.GOARCH {
		return
	}
	bin := filepath.Join(t.TempDir(), "workload-agent")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
	if want := "workload-agent " + version + " (commit " + commit + ","; !strings.HasPrefix(string(out), want) {
		t.Errorf("%s --version printed %q, want it to start with %q", path, out, want)
	}
}
