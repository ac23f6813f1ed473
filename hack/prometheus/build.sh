#!/usr/bin/env bash
# Builds Prometheus from the tools module hack/tools/prometheus/go.mod into a
# cache outside the repository, for the analysis tests (test/promharness):
#
#   ${KUBECTL_WORKLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-workload}/prometheus-<v>/prometheus
#
# The directory name carries the pinned version: a binary already built for
# the current pin is never rebuilt. KUBECTL_WORKLOAD_PROMETHEUS_DIR overrides
# the directory.
#
# Build tags:
#   remove_all_sd   leaves out every service discovery but static_configs
#                   (the tests scrape a loopback address): a third of the
#                   build and no cloud SDKs;
#   no builtinassets: the web UI is then served from files next to the
#                   binary, which do not exist, so no npm build is needed; the
#                   HTTP API the tests use is unaffected.
#
# usage: hack/prometheus/build.sh              (build if missing; print nothing)
#        hack/prometheus/build.sh --print-dir  (print the directory only)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo/hack/tools/prometheus"

export GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=readonly"
export CGO_ENABLED=0

version=$(go list -m -f '{{.Version}}' github.com/prometheus/prometheus)
cache=${KUBECTL_WORKLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-workload}
bindir=${KUBECTL_WORKLOAD_PROMETHEUS_DIR:-$cache/prometheus-$version}

if [[ ${1:-} == --print-dir ]]; then
	echo "$bindir"
	exit 0
fi

mkdir -p "$bindir"
# Parallel test packages may all find the binary missing; one builds, the
# others wait and then find it in place.
exec 9>"$bindir/.lock"
flock 9
if [[ -x $bindir/prometheus ]]; then
	exit 0
fi

# Prometheus reports its version in its build info (prometheus --version):
# module v0.316.0 is release 3.16.0.
minor=${version#v0.}
minor=${minor%%.*}
patch=${version##*.}
ldflags="-s -w -X github.com/prometheus/common/version.Version=3.$((10#${minor:1})).$patch"
ldflags+=" -X github.com/prometheus/common/version.Branch=release"
echo "build-prometheus: building prometheus $version into $bindir" >&2
start=$SECONDS
# Build next to the target and rename, so an interrupted build never leaves a
# truncated binary that a later run would take as done.
go build -trimpath -tags remove_all_sd -ldflags "$ldflags" -o "$bindir/.prometheus.tmp" github.com/prometheus/prometheus/cmd/prometheus
mv -f "$bindir/.prometheus.tmp" "$bindir/prometheus"
echo "build-prometheus: built prometheus in $((SECONDS - start))s" >&2
