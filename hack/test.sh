#!/usr/bin/env bash
# make test: every test, in two phases that each run two things side by side, then the time of
# every package (docs/testing.md, "The suite's time", says why this order and what it bought).
#
#   1. the tools the tests run (control plane, kubectl, Prometheus, chromium), beside the agent
#      image's build and test: both are builds, and the image's `make build` rewrites
#      bin/workload-agent, which phase 2's end-to-end tests run;
#   2. the end-to-end packages (mostly waiting on a control plane), beside the unit tests under
#      -race (CPU): the unit tests fill the cores the end-to-end tests leave idle.
#
# Environment (set by the Makefile): GO, TEST_TIMEOUT, TEST_E2E_P (end-to-end packages at once,
# each with its own control plane), MODULE; TEST_UNIT_PKGS and TEST_E2E_PKGS narrow the packages
# (default: every package outside test/, and ./test/...), to try this script on a few.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
timeout=${TEST_TIMEOUT:-60m}
e2e_p=${TEST_E2E_P:-1}
times=bin/test-times
rm -rf "$times"
mkdir -p "$times"
"$GO" build -o "$times/testtimes" ./hack/testtimes || exit 1
relay="$PWD/$times/testtimes"

start=$SECONDS
phase() { echo "make test: $1 ($((SECONDS - start)) s since start)"; }

phase "phase 1: the tools the tests run, beside the agent image's build and test"
make --no-print-directory cluster-bins cluster-kubectl prometheus-bin chromium &
tools=$!
make --no-print-directory test-image TEST_TIMES="$relay" TEST_TIMES_DIR="$PWD/$times"
image=$?
wait "$tools"
tools=$?
phase "phase 1 done: tools exit $tools, image exit $image"

e2e=1
if ((tools == 0)); then
	phase "phase 2: end-to-end packages, beside the unit tests"
	# shellcheck disable=SC2086 # one argument per package
	# -count=1: their result depends on binaries and a cluster that go test's cache cannot see.
	"$GO" test -json -count=1 -timeout "$timeout" -p "$e2e_p" ${TEST_E2E_PKGS:-./test/...} | "$relay" -record "$times/e2e.txt" &
	e2e=$!
else
	phase "phase 2: unit tests only (the tools did not build, so no end-to-end test can run)"
fi
# shellcheck disable=SC2046,SC2086 # one argument per package
"$GO" test -json -race -timeout "$timeout" ${TEST_UNIT_PKGS:-$("$GO" list ./... | grep -v /test/)} | "$relay" -record "$times/unit.txt"
unit=$?
phase "unit tests done: exit $unit"
if ((tools == 0)); then
	wait "$e2e"
	e2e=$?
	phase "end-to-end tests done: exit $e2e"
fi

echo
"$relay" -table -trim "${MODULE:+$MODULE/}" "$times"/*.txt
phase "done"
if ((tools || image || unit || e2e)); then
	echo "make test: FAIL (tools $tools, image $image, unit $unit, end-to-end $e2e)"
	exit 1
fi
