// Command agentbase prepares the base image of the workload-agent and runs ko on it.
//
// ko takes the base image's config as it is (user, exposed ports, environment) and adds the
// binary, its entrypoint and labels; it reads the base only from a registry. agentbase makes the
// base, for each platform, with the user and the ports config/agent/deployment.yaml relies on,
// serves it from a registry of its own on the loopback address for as long as the command runs,
// and runs the command with KO_DEFAULTBASEIMAGE naming that base by digest:
//
//	agentbase [-from REF] [-platforms linux/amd64,linux/arm64] [-user 65532:65532] [-ports 8080,8081] -- ko build ...
//
// With -from (the release: gcr.io/distroless/static:nonroot), the base is that image, pulled from
// its registry. Without it (a machine that reaches no image registry), the base is assembled
// here as distroless/static:nonroot's equivalent for a static Go binary that needs no system
// file: an empty root filesystem with /etc/passwd and /etc/group naming root, nobody and nonroot
// (65532), the nonroot home and /tmp.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	from := flag.String("from", "", "base image to pull (a registry reference); empty: assemble a nonroot static base here")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64", "platforms of the base, comma separated")
	user := flag.String("user", "65532:65532", "the image's user (uid:gid)")
	ports := flag.String("ports", "8080,8081", "TCP ports the image exposes, comma separated")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("agentbase: name the command to run (ko build ...) after --")
	}
	code, err := run(*from, strings.Split(*platforms, ","), *user, strings.Split(*ports, ","), flag.Args())
	if err != nil {
		log.Fatalf("agentbase: %v", err)
	}
	os.Exit(code)
}

func run(from string, platforms []string, user string, ports, command []string) (int, error) {
	idx, err := baseIndex(from, platforms, user, ports)
	if err != nil {
		return 0, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	ref, err := name.ParseReference(ln.Addr().String() + "/workload-agent-base:latest")
	if err != nil {
		return 0, err
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		return 0, fmt.Errorf("serving the base: %w", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "KO_DEFAULTBASEIMAGE="+ref.Context().Digest(digest.String()).String())
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}

// baseIndex is the multi-platform base: each platform's image, pulled or assembled, with the
// user and the exposed ports set in its config.
func baseIndex(from string, platforms []string, user string, ports []string) (v1.ImageIndex, error) {
	var remoteIdx v1.ImageIndex
	if from != "" {
		ref, err := name.ParseReference(from)
		if err != nil {
			return nil, err
		}
		if remoteIdx, err = remote.Index(ref, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return nil, fmt.Errorf("pulling %s: %w", from, err)
		}
	}
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		platform, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		img, err := platformImage(remoteIdx, platform)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if img, err = withConfig(img, user, ports); err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: platform}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

func platformImage(idx v1.ImageIndex, p *v1.Platform) (v1.Image, error) {
	if idx == nil {
		return assembled(p)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range manifest.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Architecture {
			return idx.Image(d.Digest)
		}
	}
	return nil, errors.New("the base image has no such platform")
}

// assembled is the nonroot static base made here: one layer, as distroless/static:nonroot
// lays out the users and their directories, with a fixed time so that the same inputs give the
// same digest.
func assembled(p *v1.Platform) (v1.Image, error) {
	layer, err := rootLayer()
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cfg.Config.WorkingDir = "/home/nonroot"
	return mutate.ConfigFile(img, cfg)
}

func rootLayer() (v1.Layer, error) {
	files := []struct {
		name    string
		mode    int64
		uid     int
		content string
		isDir   bool
	}{
		{name: "etc/", mode: 0o755, isDir: true},
		{name: "etc/passwd", mode: 0o644, content: "root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{name: "etc/group", mode: 0o644, content: "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
		{name: "home/", mode: 0o755, isDir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, isDir: true},
		{name: "root/", mode: 0o700, isDir: true},
		{name: "tmp/", mode: 0o1777, isDir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: epoch, Typeflag: tar.TypeReg, Size: int64(len(f.content))}
		if f.isDir {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// withConfig sets the user and the exposed ports, keeping the rest of the base's config.
func withConfig(img v1.Image, user string, ports []string) (v1.Image, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Config.User = user
	cfg.Config.ExposedPorts = map[string]struct{}{}
	for _, p := range ports {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return nil, fmt.Errorf("port %q: %w", p, err)
		}
		cfg.Config.ExposedPorts[p+"/tcp"] = struct{}{}
	}
	return mutate.ConfigFile(img, cfg)
}
