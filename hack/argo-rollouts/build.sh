#!/usr/bin/env bash
# Builds Argo Rollouts' controller from the tools module
# hack/tools/argo-rollouts/go.mod into a cache outside the repository, for the
# side-by-side benchmark (test/bench BenchmarkVsArgoRollouts):
#
#   ${KUBECTL_WORKLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-workload}/argo-rollouts-<v>/
#       rollouts-controller     the controller
#       crds/*.yaml             its CRDs, copied from the module (manifests/crds)
#
# The directory name carries the pinned version: a binary already built for the
# current pin is never rebuilt. KUBECTL_WORKLOAD_ARGO_ROLLOUTS_DIR overrides it.
#
# Go: v1.10.2's go.mod says `go 1.26.10`, newer than the project's Go; the go
# command is run with GOTOOLCHAIN=go1.27.3, which it fetches from the module
# proxy like any module (once per machine). ARGO_ROLLOUTS_GOTOOLCHAIN overrides.
#
# The dashboard: its web assets (server/static) are not in the module, but the
# controller (cmd/rollouts-controller) does not import the dashboard's server
# package at all, so no build tag or placeholder is needed; `go list -deps` of
# the command names no argo-rollouts/server package (docs/testing.md).
#
# usage: hack/argo-rollouts/build.sh              (build if missing; print nothing)
#        hack/argo-rollouts/build.sh --print-dir  (print the directory only)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo/hack/tools/argo-rollouts"

export GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=readonly"
export GOTOOLCHAIN=${ARGO_ROLLOUTS_GOTOOLCHAIN:-go1.27.3}
export CGO_ENABLED=0

module=github.com/argoproj/argo-rollouts
version=$(go list -m -f '{{.Version}}' "$module")
cache=${KUBECTL_WORKLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-workload}
bindir=${KUBECTL_WORKLOAD_ARGO_ROLLOUTS_DIR:-$cache/argo-rollouts-$version}

if [[ ${1:-} == --print-dir ]]; then
	echo "$bindir"
	exit 0
fi

mkdir -p "$bindir"
# Parallel runs may all find the binary missing; one builds, the others wait
# and then find it in place.
exec 9>"$bindir/.lock"
flock 9
if [[ -x $bindir/rollouts-controller && -f $bindir/crds/rollout-crd.yaml ]]; then
	exit 0
fi

src=$(go list -m -f '{{.Dir}}' "$module")
if [[ -z $src || ! -d $src ]]; then
	go mod download "$module"
	src=$(go list -m -f '{{.Dir}}' "$module")
fi
mkdir -p "$bindir/crds"
cp "$src"/manifests/crds/*-crd.yaml "$bindir/crds/"
chmod u+w "$bindir"/crds/*.yaml

ldflags="-s -w -X $module/utils/version.version=${version#v}"
ldflags+=" -X $module/utils/version.gitTag=$version -X $module/utils/version.gitTreeState=clean"
echo "build-argo-rollouts: building rollouts-controller $version into $bindir" >&2
start=$SECONDS
# Build next to the target and rename, so an interrupted build never leaves a
# truncated binary that a later run would take as done.
go build -trimpath -ldflags "$ldflags" -o "$bindir/.rollouts-controller.tmp" "$module/cmd/rollouts-controller"
mv -f "$bindir/.rollouts-controller.tmp" "$bindir/rollouts-controller"
echo "build-argo-rollouts: built rollouts-controller in $((SECONDS - start))s" >&2
