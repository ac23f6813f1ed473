package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// Manifest is a krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin),
// with the fields krew reads.
type Manifest struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   Metadata     `json:"metadata"`
	Spec       ManifestSpec `json:"spec"`
}

// Metadata is the manifest's metadata: krew reads only the name.
type Metadata struct {
	Name string `json:"name"`
}

// ManifestSpec is what krew installs.
type ManifestSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage,omitempty"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description,omitempty"`
	Caveats          string         `json:"caveats,omitempty"`
	Platforms        []KrewPlatform `json:"platforms"`
}

// KrewPlatform is one installable archive of the manifest.
type KrewPlatform struct {
	Selector *metav1.LabelSelector `json:"selector"`
	URI      string                `json:"uri"`
	Sha256   string                `json:"sha256"`
	Bin      string                `json:"bin"`
	Files    []FileOperation       `json:"files,omitempty"`
}

// FileOperation copies files matching From (a glob inside the archive) to To (inside the
// plugin's install directory).
type FileOperation struct {
	From string `json:"from"`
	To   string `json:"to"`
}

const (
	krewAPIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	krewKind       = "Plugin"
)

// krewHeader heads the generated manifest.
const krewHeader = `# krew plugin manifest (https://krew.sigs.k8s.io/docs/developer-guide/plugin-manifest/).
# Written by 'make krew-manifest' from krew.yaml and the archives 'make dist'
# built: the sha256 sums are those of the release archives. Do not edit: edit the template.
`

// Caveats is what krew prints after installing the plugin: krew links only the plugin binary
// onto PATH, not the completion script it unpacks next to it, so kubectl cannot find it.
const Caveats = `Completion of 'kubectl workload <TAB>' (kubectl 1.26 or later) needs the
kubectl_complete-workload script on your PATH, which krew does not put there.
Write it into a directory on your PATH, for example:

  kubectl workload completion kubectl > ~/.local/bin/kubectl_complete-workload
  chmod +x ~/.local/bin/kubectl_complete-workload

kubectl's own completion must be loaded too (kubectl completion --help).
The plugin works with the workload-agent in the cluster: kubectl workload install.
`

// ReadManifest parses a krew manifest, refusing fields krew does not know.
func ReadManifest(data []byte) (*Manifest, error) {
	p := &Manifest{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Generate fills a manifest's version, caveats and platforms from the archives of platforms in
// distDir: one platform per archive, with its real sha256, its URI under baseURL, the binary as
// bin and files entries that extract the binary, the completion script and LICENSE. An archive
// missing is an error naming every one missing: a manifest of fewer platforms than asked for
// would pass krew's rules and leave those platforms out of the release unnoticed.
func Generate(p *Manifest, version, distDir, baseURL string, platforms []Platform) error {
	p.Spec.Version = version
	p.Spec.Caveats = Caveats
	p.Spec.Platforms = nil
	var missing []string
	for _, pl := range platforms {
		name := ArchiveName(version, pl)
		sum, err := SHA256(filepath.Join(distDir, name))
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, pl.String()+" ("+name+")")
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p.Spec.Platforms = append(p.Spec.Platforms, KrewPlatform{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": pl.OS, "arch": pl.Arch}},
			URI:      strings.TrimSuffix(baseURL, "/") + "/" + name,
			Sha256:   sum,
			Bin:      BinaryName(pl),
			Files: []FileOperation{
				{From: BinaryName(pl), To: "."},
				{From: CompletionName(pl), To: "."},
				{From: "LICENSE", To: "."},
			},
		})
	}
	if len(missing) > 0 {
		return fmt.Errorf("no archive in %s for %s: run make dist first, with the same DIST_PLATFORMS", distDir, strings.Join(missing, ", "))
	}
	return nil
}

// ParsePlatforms reads platforms as DIST_PLATFORMS lists them: os/arch words, separated by
// spaces or commas.
func ParsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' }) {
		goos, arch, ok := strings.Cut(w, "/")
		if !ok || goos == "" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want os/arch, such as linux/amd64", w)
		}
		pl := Platform{goos, arch}
		if slices.Contains(out, pl) {
			return nil, fmt.Errorf("platform %s is listed twice", pl)
		}
		out = append(out, pl)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platform in %q", s)
	}
	return out, nil
}

// InstallArgs are the arguments of the kubectl command that installs the plugin from a local
// build in distDir on a machine of platform p: krew checks the archive it is given against the
// sha256 of the manifest's platform that matches the machine it runs on, so each platform
// installs its own archive, which must be in the manifest.
func InstallArgs(version, distDir string, p Platform) []string {
	return []string{"krew", "install", "--manifest=" + path.Join(distDir, PluginName+".yaml"), "--archive=" + path.Join(distDir, ArchiveName(version, p))}
}

// Marshal writes a manifest as krew reads it, with its header, fields in the order krew's
// documentation lists them.
func Marshal(p *Manifest) ([]byte, error) {
	type selector struct {
		MatchLabels map[string]string `yaml:"matchLabels,omitempty"`
	}
	type file struct {
		From string `yaml:"from"`
		To   string `yaml:"to"`
	}
	type platform struct {
		Selector selector `yaml:"selector"`
		URI      string   `yaml:"uri"`
		Sha256   string   `yaml:"sha256"`
		Bin      string   `yaml:"bin"`
		Files    []file   `yaml:"files,omitempty"`
	}
	type spec struct {
		Version          string     `yaml:"version"`
		Homepage         string     `yaml:"homepage,omitempty"`
		ShortDescription string     `yaml:"shortDescription"`
		Description      string     `yaml:"description,omitempty"`
		Caveats          string     `yaml:"caveats,omitempty"`
		Platforms        []platform `yaml:"platforms"`
	}
	type manifest struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec spec `yaml:"spec"`
	}
	out := manifest{APIVersion: p.APIVersion, Kind: p.Kind}
	out.Metadata.Name = p.Metadata.Name
	out.Spec = spec{Version: p.Spec.Version, Homepage: p.Spec.Homepage, ShortDescription: p.Spec.ShortDescription,
		Description: p.Spec.Description, Caveats: p.Spec.Caveats, Platforms: []platform{}}
	for _, pl := range p.Spec.Platforms {
		if pl.Selector == nil || len(pl.Selector.MatchExpressions) > 0 {
			return nil, fmt.Errorf("platform %s: only matchLabels selectors are written", pl.URI)
		}
		o := platform{Selector: selector{MatchLabels: pl.Selector.MatchLabels}, URI: pl.URI, Sha256: pl.Sha256, Bin: pl.Bin}
		for _, f := range pl.Files {
			o.Files = append(o.Files, file(f))
		}
		out.Spec.Platforms = append(out.Spec.Platforms, o)
	}
	var buf bytes.Buffer
	buf.WriteString(krewHeader)
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var (
	safeName  = regexp.MustCompile(`^[\w-]+$`)
	semverTag = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidateFileName is krew-index's rule that a manifest's file is named after its plugin
// (krew's validate-krew-manifest refuses any other name).
func ValidateFileName(p *Manifest, file string) error {
	if want := p.Metadata.Name + ".yaml"; filepath.Base(file) != want {
		return fmt.Errorf("the manifest of plugin %q must be named %s, not %s (krew-index's rule)", p.Metadata.Name, want, filepath.Base(file))
	}
	return nil
}

// krewOSes and krewArches are the platforms krew runs on, for the overlap check.
var (
	krewOSes   = []string{"linux", "darwin", "windows", "freebsd"}
	krewArches = []string{"amd64", "arm64", "386", "arm", "ppc64le", "s390x"}
)

// Validate checks a manifest against krew's rules: apiVersion and kind; a safe name; a semver
// version with a leading v; a one-line shortDescription; on every platform a selector, an https
// uri, a lowercase 64-hex sha256, a bin and files entries with from and to, LICENSE among the
// extracted files; and no os/arch matched by two platforms. requirePlatforms also requires at
// least one platform (krew does; a manifest before the first release has none).
func Validate(p *Manifest, requirePlatforms bool) []error {
	var errs []error
	bad := func(format string, args ...interface{}) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.APIVersion != krewAPIVersion {
		bad("apiVersion is %q, want %q", p.APIVersion, krewAPIVersion)
	}
	if p.Kind != krewKind {
		bad("kind is %q, want %q", p.Kind, krewKind)
	}
	if !safeName.MatchString(p.Metadata.Name) || p.Metadata.Name == "kubectl" {
		bad("metadata.name %q must match ^[\\w-]+$", p.Metadata.Name)
	}
	if !semverTag.MatchString(p.Spec.Version) {
		bad("spec.version %q is not a semantic version with a leading v (such as v1.2.3)", p.Spec.Version)
	}
	sd := strings.TrimSpace(p.Spec.ShortDescription)
	switch {
	case sd == "":
		bad("spec.shortDescription is empty")
	case strings.Contains(sd, "\n"):
		bad("spec.shortDescription %q must be one line", sd)
	}
	if requirePlatforms && len(p.Spec.Platforms) == 0 {
		bad("spec.platforms is empty: krew installs nothing")
	}
	for i, pl := range p.Spec.Platforms {
		where := fmt.Sprintf("spec.platforms[%d]", i)
		if pl.Selector == nil || (len(pl.Selector.MatchLabels) == 0 && len(pl.Selector.MatchExpressions) == 0) {
			bad("%s: selector is missing", where)
		} else if _, err := metav1.LabelSelectorAsSelector(pl.Selector); err != nil {
			bad("%s: selector: %v", where, err)
		}
		if !strings.HasPrefix(pl.URI, "https://") {
			bad("%s: uri %q must be an https URL", where, pl.URI)
		}
		if !sha256Hex.MatchString(pl.Sha256) {
			bad("%s: sha256 %q must be 64 lowercase hex digits", where, pl.Sha256)
		}
		if pl.Bin == "" {
			bad("%s: bin is missing", where)
		}
		license := false
		for j, f := range pl.Files {
			if f.From == "" || f.To == "" {
				bad("%s.files[%d]: from and to are both required", where, j)
			}
			if ok, _ := path.Match(f.From, "LICENSE"); ok {
				license = true
			}
		}
		if !license {
			bad("%s: no files entry extracts LICENSE", where)
		}
	}
	for _, goos := range krewOSes {
		for _, arch := range krewArches {
			set := labels.Set{"os": goos, "arch": arch}
			var matched []int
			for i, pl := range p.Spec.Platforms {
				if pl.Selector == nil {
					continue
				}
				if sel, err := metav1.LabelSelectorAsSelector(pl.Selector); err == nil && sel.Matches(set) {
					matched = append(matched, i)
				}
			}
			if len(matched) > 1 {
				bad("%s/%s is matched by more than one platform: %v", goos, arch, matched)
			}
		}
	}
	return errs
}
