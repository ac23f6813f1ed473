#!/usr/bin/env bash
# Builds the local control plane's binaries from the tools module
# (hack/tools/go.mod) into a cache outside the repository:
#
#   ${KUBECTL_WORKLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-workload}/k8s-<v>-etcd-<v>-kwok-<v>/
#
# The directory name carries every pinned version, so changing a pin builds a
# fresh set and binaries already built for the current pins are never rebuilt.
# KUBECTL_WORKLOAD_BIN_DIR overrides the directory.
#
# usage: hack/cluster/build-bins.sh [binary...]   (default: the control plane;
#        "kubectl" is also available)
#        hack/cluster/build-bins.sh --print-dir    (print the directory only)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
tools=$repo/hack/tools
cd "$tools"

# A go.work above the checkout must not pull the tools module into it.
export GOWORK=off GOFLAGS="${GOFLAGS:-} -mod=readonly"
# A static binary that does not depend on the host's C library.
export CGO_ENABLED=0

modversion() { go list -m -f '{{.Version}}' "$1"; }
k8s=$(modversion k8s.io/kubernetes)
etcd=$(modversion go.etcd.io/etcd/server/v3)
kwok=$(modversion sigs.k8s.io/kwok)

cache=${KUBECTL_WORKLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-workload}
bindir=${KUBECTL_WORKLOAD_BIN_DIR:-$cache/k8s-$k8s-etcd-$etcd-kwok-$kwok}

if [[ ${1:-} == --print-dir ]]; then
	echo "$bindir"
	exit 0
fi

declare -A pkgs=(
	[etcd]=go.etcd.io/etcd/server/v3
	[kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
	[kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
	[kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
	[kubectl]=k8s.io/kubernetes/cmd/kubectl
	[kwok]=sigs.k8s.io/kwok/cmd/kwok
)
wanted=("$@")
((${#wanted[@]})) || wanted=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

mkdir -p "$bindir"
# Test packages run in parallel and may all find the binaries missing; only
# one of them builds, the others wait and then find everything in place.
exec 9>"$bindir/.lock"
flock 9

# Without these the components call themselves v0.0.0-master, which breaks
# version discovery for clients (and kubectl's skew warnings).
minor=${k8s#v1.}
minor=${minor%%.*}
released=$(go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)
k8sflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	k8sflags+=" -X $p.gitVersion=$k8s -X $p.gitMajor=1 -X $p.gitMinor=$minor"
	k8sflags+=" -X $p.gitTreeState=clean -X $p.buildDate=${released:-1970-01-01T00:00:00Z}"
done

ldflags_for() {
	case $1 in
	etcd) echo "-s -w" ;;
	kwok) echo "-s -w $k8sflags -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${k8s#v}" ;;
	*) echo "-s -w $k8sflags" ;;
	esac
}

for bin in "${wanted[@]}"; do
	pkg=${pkgs[$bin]:-}
	[[ -n $pkg ]] || { echo "build-bins: unknown binary $bin (known: ${!pkgs[*]})" >&2; exit 2; }
	if [[ -x $bindir/$bin ]]; then
		continue
	fi
	echo "build-bins: building $bin ($pkg) into $bindir" >&2
	start=$SECONDS
	# Build next to the target and rename, so an interrupted build never
	# leaves a truncated binary that a later run would take as done.
	go build -trimpath -ldflags "$(ldflags_for "$bin")" -o "$bindir/.$bin.tmp" "$pkg"
	mv -f "$bindir/.$bin.tmp" "$bindir/$bin"
	echo "build-bins: built $bin in $((SECONDS - start))s" >&2
done
