package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Entry is one file of an archive: its name inside the archive, where its content is read from
// and its mode.
type Entry struct {
	Name string
	Path string
	Mode int64
}

// Platform is one OS/architecture of a release.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Platforms are the platforms a release is built for.
var Platforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// PluginName is the plugin's name for krew; the binary is kubectl-<name>.
const PluginName = "workload"

// BinaryName is the plugin binary on a platform.
func BinaryName(p Platform) string {
	if p.OS == "windows" {
		return "kubectl-" + PluginName + ".exe"
	}
	return "kubectl-" + PluginName
}

// CompletionName is the kubectl plugin-completion script shipped for a platform.
func CompletionName(p Platform) string {
	if p.OS == "windows" {
		return "kubectl_complete-" + PluginName + ".cmd"
	}
	return "kubectl_complete-" + PluginName
}

// ArchiveName is the release archive of a platform: a zip for Windows, a tar.gz elsewhere.
func ArchiveName(version string, p Platform) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("kubectl-%s_%s_%s_%s%s", PluginName, version, p.OS, p.Arch, ext)
}

// Entries are the files of a platform's archive: the binary, the completion script, LICENSE.
func Entries(p Platform, binary, completionDir, license string) []Entry {
	return []Entry{
		{Name: BinaryName(p), Path: binary, Mode: 0o755},
		{Name: CompletionName(p), Path: filepath.Join(completionDir, CompletionName(p)), Mode: 0o755},
		{Name: "LICENSE", Path: license, Mode: 0o644},
	}
}

// WriteArchive writes entries into dst (.tar.gz or .zip by its name) reproducibly: entries in the
// given order, every timestamp set to mtime, owner and group 0 with no names, no gzip name or
// time; the same inputs always give the same bytes, so the sha256 sums are stable.
func WriteArchive(dst string, entries []Entry, mtime time.Time) error {
	var buf bytes.Buffer
	var err error
	switch {
	case strings.HasSuffix(dst, ".tar.gz"):
		err = writeTarGz(&buf, entries, mtime)
	case strings.HasSuffix(dst, ".zip"):
		err = writeZip(&buf, entries, mtime)
	default:
		err = fmt.Errorf("%s: the archive must be a .tar.gz or a .zip", dst)
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

func writeTarGz(out io.Writer, entries []Entry, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(out, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	// No name, no modification time, a fixed OS byte: the header is the same on every machine.
	gz.Header = gzip.Header{OS: 255}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		data, err := os.ReadFile(e.Path)
		if err != nil {
			return err
		}
		// USTAR: whole-second times, numeric owner 0:0 and no user or group names.
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: e.Name, Mode: e.Mode, Size: int64(len(data)),
			ModTime: mtime.UTC().Truncate(time.Second), Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(out io.Writer, entries []Entry, mtime time.Time) error {
	zw := zip.NewWriter(out)
	for _, e := range entries {
		data, err := os.ReadFile(e.Path)
		if err != nil {
			return err
		}
		hdr := &zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: mtime.UTC().Truncate(time.Second)}
		hdr.SetMode(os.FileMode(e.Mode))
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// ArchiveFiles lists the file names inside an archive.
func ArchiveFiles(path string) ([]string, error) {
	var names []string
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		for _, f := range zr.File {
			names = append(names, f.Name)
		}
		return names, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		names = append(names, hdr.Name)
	}
}

// SHA256 is the lowercase hex sha256 of a file.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
