#!/usr/bin/env bash
# Regenerates deepcopy functions, the typed clientset (with its fake), listers, informers and the
# CRD manifests. Every generator is pinned as a `tool` in go.mod, so nothing is installed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

module=$(go list -m)
apis=./pkg/apis/apps/v1alpha1
header=hack/boilerplate.go.txt
out=pkg/generated

rm -rf "$out"
rm -f pkg/apis/apps/v1alpha1/zz_generated.deepcopy.go

go tool deepcopy-gen --go-header-file "$header" --output-file zz_generated.deepcopy.go "$apis"

go tool client-gen --go-header-file "$header" \
  --clientset-name versioned \
  --input-base "$module/pkg/apis" --input apps/v1alpha1 \
  --output-dir "$out/clientset" --output-pkg "$module/$out/clientset"

go tool lister-gen --go-header-file "$header" \
  --output-dir "$out/listers" --output-pkg "$module/$out/listers" "$apis"

go tool informer-gen --go-header-file "$header" \
  --versioned-clientset-package "$module/$out/clientset/versioned" \
  --listers-package "$module/$out/listers" \
  --output-dir "$out/informers" --output-pkg "$module/$out/informers" "$apis"

rm -rf config/crd
go tool controller-gen crd:generateEmbeddedObjectMeta=true paths=./pkg/apis/... output:crd:artifacts:config=config/crd
go run ./hack/crdtrim config/crd/*.yaml
