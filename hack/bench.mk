# Benchmarks on the local control plane (bench/RESULTS.md; issues 4, 5 and 7): test/bench.
# Included by the root Makefile, which provides `build` (bin/kubectl-workload and
# bin/workload-agent); cluster-bins comes from hack/cluster.mk.
#
#   make bench                          every scenario, as in bench/RESULTS.md
#   make bench BENCH=BenchmarkTApp      one benchmark (its preconditions are made by it)
#   make bench BENCH=BenchmarkScaleOutPair   issue 15's TApp (no gate)/Deployment scale-out ratio
#   make bench BENCH=BenchmarkReaction   issue 30's reaction times, status lag and CPU per pod event
#   make bench BENCH=BenchmarkVsArgoRollouts issue 30's release against Argo Rollouts' controller
#   make bench BENCH_ENV='BENCH_REPLICAS=100 BENCH_UNRELATED=1000'   a quick try-out
#
# Benchmarks print figures and ratios measured in the same run; they assert no timing. The
# settings (BENCH_REPLICAS, BENCH_UD_SUBSET, BENCH_UNRELATED, BENCH_UNRELATED_DEPLOYMENTS,
# BENCH_UNRELATED_STATEFULSETS, BENCH_SMALL_WORKLOADS, BENCH_SMALL_REPLICAS, BENCH_LOAD_CANARIES,
# BENCH_REACTION_ROUNDS, BENCH_PLUGIN_RUNS,
# BENCH_ROUNDS, BENCH_QPS, BENCH_BURST, BENCH_TIMEOUT, BENCH_OUT_DIR) are described in test/bench/doc.go.

BENCH ?= .
BENCH_ENV ?=
BENCH_TIMEOUT_GO ?= 120m

.PHONY: bench

bench: cluster-bins cluster-kubectl argo-rollouts-bin build ## Run the benchmarks on a local control plane and print their figures (see bench/RESULTS.md).
	WORKLOAD_AGENT_BIN=$(CURDIR)/bin/workload-agent KUBECTL_WORKLOAD_BIN=$(CURDIR)/bin/kubectl-workload $(BENCH_ENV) \
		$(or $(GO),go) test -count=1 -run '^$$' -bench '$(BENCH)' -benchtime=1x -timeout $(BENCH_TIMEOUT_GO) ./test/bench/
