#!/usr/bin/env bash
# Fails when the tree is not clean: gofmt, go vet (the root module and hack/tools/ko), actionlint on
# .github/workflows, or generated code and CRDs that differ from what `make generate` writes.
# Generation runs on a copy of the repository, so the tree is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted" | sed 's/^/  /'
  status=1
fi

go vet ./... || status=1
(cd hack/tools/ko && go vet ./...) || status=1

# actionlint, built from its pinned module (hack/tools/actionlint) into the cache once per pin.
cache="${KUBECTL_WORKLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-workload}"
actionlint="$cache/tools/actionlint-$(sha256sum hack/tools/actionlint/go.sum | cut -c1-12)/actionlint"
if [ ! -x "$actionlint" ]; then
  (cd hack/tools/actionlint && go build -o "$actionlint" github.com/rhysd/actionlint/cmd/actionlint)
fi
"$actionlint" -no-color || { echo "actionlint: .github/workflows has errors"; status=1; }

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
