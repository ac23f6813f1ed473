#!/usr/bin/env bash
# Re-pins the tools module to one Kubernetes release.
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, ...) at v0.0.0
# and replaces them with ./staging/... paths that only exist inside its own
# repository. Consumers must replace each of them with the published release
# cut together with that Kubernetes version (v1.X.Y -> v0.X.Y); this script
# reads the list from the release's go.mod so none is forgotten.
#
# usage: hack/tools/pin-kubernetes.sh v1.37.1
set -euo pipefail

version=${1:?usage: $0 v1.X.Y}
staging=v0.${version#v1.}
cd "$(dirname "$0")"

modfile=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
[[ -f $modfile ]] || { echo "cannot download k8s.io/kubernetes@${version}" >&2; exit 1; }

args=(-require="k8s.io/kubernetes@${version}")
while read -r mod; do
	args+=(-replace="${mod}=${mod}@${staging}")
done < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$modfile")

go mod edit "${args[@]}"
# etcd's server must match the etcd client libraries Kubernetes was built
# against, so take its version from the same go.mod.
etcd=$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2}' "$modfile")
go mod edit -require="go.etcd.io/etcd/server/v3@${etcd}"
go mod tidy
