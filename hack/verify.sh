#!/usr/bin/env bash
# Fails when the tree is not clean: gofmt, go vet, or generated code and CRDs that differ from what
# `make generate` writes. Generation runs on a copy of the repository, so the tree is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
unformatted=$(gofmt -l $(git ls-files '*.go' | grep -v '^hack/tools/'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted" | sed 's/^/  /'
  status=1
fi

go vet ./... || status=1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Tracked and untracked (not ignored) files: what a commit of the current tree would hold.
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work" 2>/dev/null || true
(cd "$work" && hack/update-codegen.sh >/dev/null)
for dir in pkg/generated config/crd; do
  if ! diff -r "$dir" "$work/$dir" >"$work/diff.txt" 2>&1; then
    echo "$dir is stale: run 'make generate' and commit the result"
    head -n 40 "$work/diff.txt" | sed 's/^/  /'
    status=1
  fi
done
if ! diff pkg/apis/apps/v1alpha1/zz_generated.deepcopy.go "$work/pkg/apis/apps/v1alpha1/zz_generated.deepcopy.go" >/dev/null; then
  echo "pkg/apis/apps/v1alpha1/zz_generated.deepcopy.go is stale: run 'make generate'"
  status=1
fi
[ $status -eq 0 ] && echo "verify: ok"
exit $status
