// Command release builds the release artifacts of kubectl-workload: reproducible archives per
// platform and the krew manifest with their sha256 sums. hack/dist.mk runs it:
//
//	go run ./hack/release archive -os linux -arch amd64 -version v0.1.0 -bin dist/bin/linux_amd64/kubectl-workload -out dist
//	go run ./hack/release krew -version v0.1.0 -dist dist -base-url https://…/releases/download/v0.1.0 -template krew.yaml -out dist/workload.yaml [-platforms 'linux/amd64 …']
//	go run ./hack/release krew-install -version v0.1.0 -dist dist [-dry-run]
//	go run ./hack/release checksums -version v0.1.0 -dist dist
//	go run ./hack/release validate [-krew-index] -manifest dist/workload.yaml
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// defaultEpoch is the archives' timestamp when SOURCE_DATE_EPOCH is unset: 1980-01-01, the
// earliest time a zip can hold.
const defaultEpoch = 315532800

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: release archive|krew|krew-install|checksums|validate [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "archive":
		err = archiveCmd(os.Args[2:])
	case "krew":
		err = krewCmd(os.Args[2:])
	case "krew-install":
		err = krewInstallCmd(os.Args[2:], Platform{runtime.GOOS, runtime.GOARCH}, os.Stdout)
	case "checksums":
		err = checksumsCmd(os.Args[2:])
	case "validate":
		err = validateCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: use archive, krew, krew-install, checksums or validate", os.Args[1])
	}
	fail(err)
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "release: "+err.Error())
		os.Exit(1)
	}
}

// sourceDate is SOURCE_DATE_EPOCH (https://reproducible-builds.org/specs/source-date-epoch/).
func sourceDate() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(defaultEpoch, 0), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", v)
	}
	return time.Unix(max(n, defaultEpoch), 0), nil
}

func archiveCmd(args []string) error {
	fs := flag.NewFlagSet("archive", flag.ExitOnError)
	goos := fs.String("os", "", "target OS")
	arch := fs.String("arch", "", "target architecture")
	version := fs.String("version", "", "release version")
	bin := fs.String("bin", "", "the built binary")
	out := fs.String("out", "dist", "directory for the archive")
	license := fs.String("license", "LICENSE", "the LICENSE file")
	completion := fs.String("completion-dir", "hack", "directory of the kubectl_complete-workload scripts")
	_ = fs.Parse(args)
	if *goos == "" || *arch == "" || *version == "" || *bin == "" {
		return fmt.Errorf("archive needs -os, -arch, -version and -bin")
	}
	mtime, err := sourceDate()
	if err != nil {
		return err
	}
	p := Platform{*goos, *arch}
	dst := filepath.Join(*out, ArchiveName(*version, p))
	if err := WriteArchive(dst, Entries(p, *bin, *completion, *license), mtime); err != nil {
		return err
	}
	fmt.Println(dst)
	return nil
}

func krewCmd(args []string) error {
	fs := flag.NewFlagSet("krew", flag.ExitOnError)
	version := fs.String("version", "", "release version (semver with a leading v)")
	dist := fs.String("dist", "dist", "directory holding the archives")
	baseURL := fs.String("base-url", "", "URL the archives are downloaded from")
	template := fs.String("template", "krew.yaml", "the manifest without version and platforms")
	manifest := fs.String("out", filepath.Join("dist", PluginName+".yaml"), "the manifest to write (named after the plugin, as krew-index requires)")
	platformList := fs.String("platforms", "", "the platforms of the manifest, os/arch separated by spaces or commas (DIST_PLATFORMS); empty: every release platform")
	_ = fs.Parse(args)
	if *version == "" || *baseURL == "" {
		return fmt.Errorf("krew needs -version and -base-url")
	}
	platforms := Platforms
	if strings.TrimSpace(*platformList) != "" {
		var err error
		if platforms, err = ParsePlatforms(*platformList); err != nil {
			return fmt.Errorf("-platforms: %w", err)
		}
	}
	data, err := os.ReadFile(*template)
	if err != nil {
		return err
	}
	m, err := ReadManifest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *template, err)
	}
	if err := Generate(m, *version, *dist, *baseURL, platforms); err != nil {
		return err
	}
	errs := Validate(m, true)
	if err := ValidateFileName(m, *manifest); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("the generated manifest breaks krew's rules: %v", errs)
	}
	out, err := Marshal(m)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*manifest, out, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %s with %d platforms\n", *manifest, *version, len(m.Spec.Platforms))
	return nil
}

// krewInstallCmd installs the plugin with krew from a local build in -dist, with the archive of
// the machine's own platform (host): the one krew checks. With -dry-run it prints the command.
func krewInstallCmd(args []string, host Platform, out io.Writer) error {
	fs := flag.NewFlagSet("krew-install", flag.ExitOnError)
	version := fs.String("version", "", "release version")
	dist := fs.String("dist", "dist", "directory holding the manifest and the archive")
	dryRun := fs.Bool("dry-run", false, "print the kubectl command instead of running it")
	_ = fs.Parse(args)
	if *version == "" {
		return fmt.Errorf("krew-install needs -version")
	}
	manifest := filepath.Join(*dist, PluginName+".yaml")
	archive := filepath.Join(*dist, ArchiveName(*version, host))
	for _, f := range []string{manifest, archive} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s: %w: run make dist krew-manifest DIST_PLATFORMS=%s first (make krew-install does)", f, err, host)
		}
	}
	data, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	m, err := ReadManifest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", manifest, err)
	}
	if !slices.ContainsFunc(m.Spec.Platforms, func(p KrewPlatform) bool { return p.URI != "" && path.Base(p.URI) == ArchiveName(*version, host) }) {
		return fmt.Errorf("%s has no platform for %s (this machine), so krew would refuse the archive: run make krew-manifest with %s in DIST_PLATFORMS", manifest, host, host)
	}
	kubectlArgs := InstallArgs(*version, filepath.ToSlash(*dist), host)
	if *dryRun {
		_, err := fmt.Fprintln(out, "kubectl "+strings.Join(kubectlArgs, " "))
		return err
	}
	if err := exec.Command("kubectl", "krew", "version").Run(); err != nil {
		return fmt.Errorf("kubectl krew version: %w: install krew first (https://krew.sigs.k8s.io/docs/user-guide/setup/install/)", err)
	}
	cmd := exec.Command("kubectl", kubectlArgs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, out, os.Stderr
	return cmd.Run()
}

func checksumsCmd(args []string) error {
	fs := flag.NewFlagSet("checksums", flag.ExitOnError)
	version := fs.String("version", "", "release version")
	dist := fs.String("dist", "dist", "directory holding the archives")
	_ = fs.Parse(args)
	var b strings.Builder
	for _, p := range Platforms {
		name := ArchiveName(*version, p)
		sum, err := SHA256(filepath.Join(*dist, name))
		if os.IsNotExist(err) {
			continue // a build of some platforms only (DIST_PLATFORMS)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, name)
	}
	if b.Len() == 0 {
		return fmt.Errorf("no %s archive in %s", *version, *dist)
	}
	dst := filepath.Join(*dist, "SHA256SUMS")
	if err := os.WriteFile(dst, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	return nil
}

func validateCmd(args []string) error {
	fs := flag.NewFlagSet("validate", flag.ExitOnError)
	manifest := fs.String("manifest", filepath.Join("dist", PluginName+".yaml"), "the manifest to check")
	krewIndex := fs.Bool("krew-index", false, "also apply krew-index's rules: platforms listed, the file named after the plugin, caveats")
	_ = fs.Parse(args)
	data, err := os.ReadFile(*manifest)
	if err != nil {
		return err
	}
	m, err := ReadManifest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *manifest, err)
	}
	errs := Validate(m, *krewIndex)
	if *krewIndex {
		if err := ValidateFileName(m, *manifest); err != nil {
			errs = append(errs, err)
		}
		if m.Spec.Caveats == "" {
			errs = append(errs, fmt.Errorf("spec.caveats is empty: nothing tells the user to put kubectl_complete-workload on PATH"))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s breaks krew's rules: %v", *manifest, errs)
	}
	fmt.Printf("%s: valid\n", *manifest)
	return nil
}
