package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

const repo = "../.."

func readManifest(t *testing.T, name string) *Manifest {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadManifest(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

func checkValid(t *testing.T, m *Manifest, requirePlatforms bool) {
	t.Helper()
	for _, err := range Validate(m, requirePlatforms) {
		t.Error(err)
	}
}

// template is the committed manifest template make krew-manifest fills.
var template = filepath.Join(repo, "krew.yaml")

// The committed template follows krew's rules and lists no platform: platforms and their sums
// exist only for archives make dist built, in the generated dist/workload.yaml.
func TestKrewTemplate(t *testing.T) {
	m := readManifest(t, template)
	if m.Metadata.Name != PluginName {
		t.Errorf("metadata.name %q, want %q (the binary is kubectl-%s)", m.Metadata.Name, PluginName, PluginName)
	}
	checkValid(t, m, false)
	if len(m.Spec.Platforms) > 0 {
		t.Errorf("the template lists %d platforms: their sums would be of no release", len(m.Spec.Platforms))
	}
	if m.Spec.Caveats != "" {
		t.Error("the template has caveats: hack/release writes them (Caveats)")
	}
}

// buildPlugin builds the real plugin binary for the host platform, as make dist does.
func buildPlugin(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, BinaryName(Platform{runtime.GOOS, runtime.GOARCH}))
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -buildid= -X github.com/kubectl-workload/kubectl-workload/pkg/version.Version=v0.1.0", "-o", bin, "./cmd/kubectl-workload")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// From a real archive of the real binary: the manifest follows krew's rules, its sha256 is the
// archive's, and the archive holds the bin and every file the manifest extracts.
func TestManifestFromRealArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	dir := t.TempDir()
	host := Platform{runtime.GOOS, runtime.GOARCH}
	bin := buildPlugin(t, dir)
	dist := filepath.Join(dir, "dist")
	mtime := time.Unix(defaultEpoch, 0)
	archive := filepath.Join(dist, ArchiveName("v0.1.0", host))
	if err := WriteArchive(archive, Entries(host, bin, filepath.Join(repo, "hack"), filepath.Join(repo, "LICENSE")), mtime); err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, template)
	if err := Generate(m, "v0.1.0", dist, "https://github.com/kubectl-workload/kubectl-workload/releases/download/v0.1.0", []Platform{host}); err != nil {
		t.Fatal(err)
	}
	checkValid(t, m, true)
	sum, err := SHA256(archive)
	if err != nil {
		t.Fatal(err)
	}
	pl := m.Spec.Platforms[0]
	if pl.Sha256 != sum {
		t.Errorf("sha256 %s, archive has %s", pl.Sha256, sum)
	}
	files, err := ArchiveFiles(archive)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
	}
	for _, f := range pl.Files {
		if !have[f.From] {
			t.Errorf("the manifest extracts %s, which the archive (%v) lacks", f.From, files)
		}
	}
	if !have[pl.Bin] {
		t.Errorf("bin %s is not in the archive %v", pl.Bin, files)
	}
	// The binary in the archive is a working plugin.
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v0.1.0") {
		t.Errorf("%s version: %v\n%s", bin, err, out)
	}
}

// The same inputs give the same archive bytes, whatever the files' own times and the clock.
func TestArchivesAreReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubectl-workload")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho plugin\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Platform{{"linux", "amd64"}, {"windows", "arm64"}} {
		var sums []string
		for i := 0; i < 2; i++ {
			// Different file times and modes on disk must not change the archive.
			_ = os.Chtimes(bin, time.Now().Add(time.Duration(i)*time.Hour), time.Now().Add(time.Duration(i)*time.Hour))
			_ = os.Chmod(bin, os.FileMode(0o700+i*0o55))
			dst := filepath.Join(dir, "run", string(rune('a'+i)), ArchiveName("v1.0.0", p))
			if err := WriteArchive(dst, Entries(p, bin, filepath.Join(repo, "hack"), filepath.Join(repo, "LICENSE")), time.Unix(defaultEpoch, 0)); err != nil {
				t.Fatal(err)
			}
			sum, err := SHA256(dst)
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, sum)
		}
		if sums[0] != sums[1] {
			t.Errorf("%s: two archives of the same files differ: %v", p, sums)
		}
	}
}

// The krew subcommand writes a manifest for every release platform that krew's rules accept and
// that reads back unchanged.
func TestKrewCommandWritesEveryPlatform(t *testing.T) {
	dir := t.TempDir()
	dist := filepath.Join(dir, "dist")
	writeArchives(t, dist, "v1.2.3", Platforms)
	manifest := filepath.Join(dir, "workload.yaml")
	if err := krewCmd([]string{"-version", "v1.2.3", "-dist", dist, "-base-url", "https://example.com/releases/v1.2.3/", "-template", template, "-out", manifest}); err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, manifest)
	checkValid(t, m, true)
	if err := validateCmd([]string{"-krew-index", "-manifest", manifest}); err != nil {
		t.Errorf("krew-index rules: %v", err)
	}
	if !strings.Contains(m.Spec.Caveats, "kubectl workload completion kubectl > ") || !strings.Contains(m.Spec.Caveats, "kubectl_complete-workload") {
		t.Errorf("the caveats do not tell how to put kubectl_complete-workload on PATH:\n%s", m.Spec.Caveats)
	}
	if len(m.Spec.Platforms) != len(Platforms) {
		t.Errorf("%d platforms, want %d", len(m.Spec.Platforms), len(Platforms))
	}
	for _, p := range m.Spec.Platforms {
		if p.Selector.MatchLabels["os"] == "windows" && !strings.HasSuffix(p.Bin, ".exe") {
			t.Errorf("windows bin %q lacks .exe", p.Bin)
		}
		if !strings.HasPrefix(p.URI, "https://example.com/releases/v1.2.3/kubectl-workload_v1.2.3_") {
			t.Errorf("uri %s", p.URI)
		}
	}
	if err := krewCmd([]string{"-version", "v1.2.4", "-dist", dist, "-base-url", "https://example.com", "-template", template, "-out", manifest}); err == nil || !strings.Contains(err.Error(), "run make dist first") {
		t.Errorf("a version without archives: got %v, want an error asking for make dist", err)
	}
	if err := krewCmd([]string{"-version", "v1.2.3", "-dist", dist, "-base-url", "https://example.com", "-template", template, "-out", filepath.Join(dir, "krew.yaml")}); err == nil || !strings.Contains(err.Error(), "must be named workload.yaml") {
		t.Errorf("a manifest not named after the plugin: got %v, want krew-index's file name rule", err)
	}
}

// Under krew-index's rules a manifest is refused when its file is not named after the plugin,
// when it lists no platform, or when it has no caveats; the template passes only krew's own.
func TestValidateKrewIndexRules(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	copyAs := func(name string, m *Manifest) string {
		out := data
		if m != nil {
			if out, err = Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := validateCmd([]string{"-manifest", copyAs("workload.yaml", nil)}); err != nil {
		t.Errorf("the template under krew's rules: %v", err)
	}
	if err := validateCmd([]string{"-krew-index", "-manifest", copyAs("workload.yaml", nil)}); err == nil || !strings.Contains(err.Error(), "platforms is empty") || !strings.Contains(err.Error(), "caveats") {
		t.Errorf("the template under krew-index's rules: %v, want refused for platforms and caveats", err)
	}
	m := readManifest(t, template)
	m.Spec.Caveats = Caveats
	m.Spec.Platforms = []KrewPlatform{{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": "linux", "arch": "amd64"}},
		URI: "https://example.com/a.tar.gz", Sha256: strings.Repeat("ab", 32), Bin: "kubectl-workload",
		Files: []FileOperation{{From: "*", To: "."}}}}
	if err := validateCmd([]string{"-krew-index", "-manifest", copyAs("workload.yaml", m)}); err != nil {
		t.Errorf("a complete manifest named workload.yaml: %v", err)
	}
	if err := validateCmd([]string{"-krew-index", "-manifest", copyAs("krew.yaml", m)}); err == nil || !strings.Contains(err.Error(), "must be named workload.yaml") {
		t.Errorf("a complete manifest named krew.yaml: %v, want krew-index's file name rule", err)
	}
}

func TestValidateRejectsWhatKrewRejects(t *testing.T) {
	good := func() *Manifest {
		return &Manifest{APIVersion: krewAPIVersion, Kind: krewKind, Metadata: Metadata{Name: "workload"},
			Spec: ManifestSpec{Version: "v0.1.0", ShortDescription: "Release workloads", Platforms: []KrewPlatform{
				{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": "linux", "arch": "amd64"}},
					URI: "https://example.com/a.tar.gz", Sha256: strings.Repeat("ab", 32), Bin: "kubectl-workload",
					Files: []FileOperation{{From: "kubectl-workload", To: "."}, {From: "LICENSE", To: "."}}},
				{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": "darwin"}},
					URI: "https://example.com/b.tar.gz", Sha256: strings.Repeat("cd", 32), Bin: "kubectl-workload",
					Files: []FileOperation{{From: "*", To: "."}}},
			}}}
	}
	if errs := Validate(good(), true); len(errs) > 0 {
		t.Fatalf("a good manifest is refused: %v", errs)
	}
	for _, tt := range []struct {
		name   string
		mutate func(*Manifest)
		want   string
	}{
		{"api version", func(m *Manifest) { m.APIVersion = "krew.googlecontainertools.github.com/v1alpha1" }, "apiVersion"},
		{"kind", func(m *Manifest) { m.Kind = "Plugins" }, "kind"},
		{"name", func(m *Manifest) { m.Metadata.Name = "work load" }, "metadata.name"},
		{"version without v", func(m *Manifest) { m.Spec.Version = "0.1.0" }, "spec.version"},
		{"version not semver", func(m *Manifest) { m.Spec.Version = "v0.1" }, "spec.version"},
		{"short description", func(m *Manifest) { m.Spec.ShortDescription = "one\ntwo" }, "one line"},
		{"no short description", func(m *Manifest) { m.Spec.ShortDescription = " " }, "shortDescription is empty"},
		{"no platform", func(m *Manifest) { m.Spec.Platforms = nil }, "platforms is empty"},
		{"uppercase sha", func(m *Manifest) { m.Spec.Platforms[0].Sha256 = strings.Repeat("AB", 32) }, "sha256"},
		{"short sha", func(m *Manifest) { m.Spec.Platforms[0].Sha256 = "abc" }, "sha256"},
		{"no uri", func(m *Manifest) { m.Spec.Platforms[0].URI = "" }, "uri"},
		{"no bin", func(m *Manifest) { m.Spec.Platforms[0].Bin = "" }, "bin is missing"},
		{"no selector", func(m *Manifest) { m.Spec.Platforms[0].Selector = nil }, "selector is missing"},
		{"no license", func(m *Manifest) { m.Spec.Platforms[0].Files = m.Spec.Platforms[0].Files[:1] }, "LICENSE"},
		{"file without to", func(m *Manifest) { m.Spec.Platforms[0].Files[0].To = "" }, "from and to"},
		{"overlapping selectors", func(m *Manifest) {
			m.Spec.Platforms[1].Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"os": "linux"}}
		}, "linux/amd64 is matched by more than one platform"},
	} {
		m := good()
		tt.mutate(m)
		errs := Validate(m, true)
		found := false
		for _, err := range errs {
			found = found || strings.Contains(err.Error(), tt.want)
		}
		if !found {
			t.Errorf("%s: errors %v lack %q", tt.name, errs, tt.want)
		}
	}
	if _, err := ReadManifest([]byte("apiVersion: x\nkind: Plugin\nspec:\n  platfroms: []\n")); err == nil {
		t.Error("a misspelt field is accepted")
	}
}

// writeArchives writes stand-in archives of version for platforms into dist.
func writeArchives(t *testing.T, dist, version string, platforms []Platform) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stand-in")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		if err := WriteArchive(filepath.Join(dist, ArchiveName(version, p)), Entries(p, bin, filepath.Join(repo, "hack"), filepath.Join(repo, "LICENSE")), time.Unix(defaultEpoch, 0)); err != nil {
			t.Fatal(err)
		}
	}
}

// make dist krew-manifest DIST_PLATFORMS=linux/amd64 writes a manifest of that archive only,
// which passes krew's and krew-index's rules; a platform asked for without its archive is
// refused, every missing one named, and nothing is written.
func TestKrewManifestOfSomePlatforms(t *testing.T) {
	dir := t.TempDir()
	dist := filepath.Join(dir, "dist")
	writeArchives(t, dist, "v1.2.3", []Platform{{"linux", "amd64"}})
	manifest := filepath.Join(dir, "workload.yaml")
	base := []string{"-version", "v1.2.3", "-dist", dist, "-base-url", "https://example.com", "-template", template, "-out", manifest}
	if err := krewCmd(append(base, "-platforms", "linux/amd64")); err != nil {
		t.Fatal(err)
	}
	m := readManifest(t, manifest)
	if len(m.Spec.Platforms) != 1 || m.Spec.Platforms[0].Selector.MatchLabels["os"] != "linux" || m.Spec.Platforms[0].Selector.MatchLabels["arch"] != "amd64" {
		t.Errorf("platforms %+v, want linux/amd64 only", m.Spec.Platforms)
	}
	if err := validateCmd([]string{"-krew-index", "-manifest", manifest}); err != nil {
		t.Errorf("krew-index rules: %v", err)
	}
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	err := krewCmd(append(base, "-platforms", "linux/amd64 linux/arm64,darwin/arm64"))
	for _, want := range []string{"linux/arm64 (kubectl-workload_v1.2.3_linux_arm64.tar.gz)", "darwin/arm64 (kubectl-workload_v1.2.3_darwin_arm64.tar.gz)", "run make dist first"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing archives: got %v, want it to name %q", err, want)
		}
	}
	if _, err := os.Stat(manifest); err == nil {
		t.Error("a manifest was written though archives were missing")
	}
	// Without -platforms, every release platform is asked for.
	if err := krewCmd(base); err == nil || !strings.Contains(err.Error(), "windows/arm64") {
		t.Errorf("every platform, one archive built: got %v, want windows/arm64 named missing", err)
	}
}

func TestParsePlatforms(t *testing.T) {
	got, err := ParsePlatforms(" linux/amd64  darwin/arm64,windows/amd64\n")
	if err != nil || len(got) != 3 || got[2] != (Platform{"windows", "amd64"}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "linux", "linux/", "/amd64", "linux/amd64/v2", "linux/amd64 linux/amd64"} {
		if _, err := ParsePlatforms(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The command that installs a local build on each platform: krew checks the archive against the
// manifest's platform of the machine, so each installs its own (docs/distribution.md lists them).
func TestKrewInstallCommandPerPlatform(t *testing.T) {
	var b strings.Builder
	for _, p := range Platforms {
		fmt.Fprintf(&b, "%s: kubectl %s\n", p, strings.Join(InstallArgs("v0.1.0", "dist", p), " "))
	}
	cmdtest.Golden(t, "krew-install-commands", b.String())
	doc, err := os.ReadFile(filepath.Join(repo, "docs", "distribution.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Platforms {
		if want := "kubectl " + strings.Join(InstallArgs("v0.1.0", "dist", p), " "); !strings.Contains(string(doc), want) {
			t.Errorf("docs/distribution.md does not give %s's command: %s", p, want)
		}
	}
}

// make krew-install's last step picks this machine's archive, and refuses, saying what to run,
// when it or its platform in the manifest is missing.
func TestKrewInstallPicksTheHostArchive(t *testing.T) {
	dir := t.TempDir()
	dist := filepath.Join(dir, "dist")
	built := []Platform{{"linux", "arm64"}, {"darwin", "arm64"}}
	writeArchives(t, dist, "v1.2.3", built)
	if err := krewCmd([]string{"-version", "v1.2.3", "-dist", dist, "-base-url", "https://example.com", "-template", template,
		"-out", filepath.Join(dist, "workload.yaml"), "-platforms", "linux/arm64 darwin/arm64"}); err != nil {
		t.Fatal(err)
	}
	for _, host := range built {
		var out strings.Builder
		if err := krewInstallCmd([]string{"-version", "v1.2.3", "-dist", dist, "-dry-run"}, host, &out); err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		want := "kubectl krew install --manifest=" + filepath.ToSlash(dist) + "/workload.yaml --archive=" + filepath.ToSlash(dist) + "/" + ArchiveName("v1.2.3", host) + "\n"
		if out.String() != want {
			t.Errorf("%s: %q, want %q", host, out.String(), want)
		}
	}
	err := krewInstallCmd([]string{"-version", "v1.2.3", "-dist", dist, "-dry-run"}, Platform{"linux", "amd64"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "DIST_PLATFORMS=linux/amd64") {
		t.Errorf("no archive for the host: %v, want the make command that builds it", err)
	}
	// An archive whose platform the manifest lacks: krew would refuse it.
	writeArchives(t, dist, "v1.2.3", []Platform{{"linux", "amd64"}})
	err = krewInstallCmd([]string{"-version", "v1.2.3", "-dist", dist, "-dry-run"}, Platform{"linux", "amd64"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "has no platform for linux/amd64") {
		t.Errorf("the manifest lacks the host: %v", err)
	}
}
