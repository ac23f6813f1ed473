// Package version holds the build's version, stamped by the Makefile with -ldflags -X, so that
// both binaries report exactly what was built.
package version

import (
	"fmt"
	"runtime"
)

// Set with -ldflags "-X github.com/kubectl-workload/kubectl-workload/pkg/version.Version=…".
var (
	// Version is the release (a git tag such as v0.1.0), or a git description for dev builds.
	Version = "v0.0.0-dev"
	// GitCommit is the commit the binary was built from.
	GitCommit = "unknown"
)

// Info describes a build.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's version information.
func Get() Info {
	return Info{
		Version:   Version,
		GitCommit: GitCommit,
		GoVersion: runtime.Version(),
		Platform:  fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}
}

func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s, %s)", i.Version, i.GitCommit, i.GoVersion, i.Platform)
}
