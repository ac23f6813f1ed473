# Argo Rollouts' controller for the side-by-side benchmark (test/bench BenchmarkVsArgoRollouts),
# built from hack/tools/argo-rollouts into the cache next to the control plane. See
# bench/RESULTS.md ("Against Argo Rollouts") and docs/testing.md.
#
# Included by the root Makefile after hack/cluster.mk (it shares its cache variables).
#
# Targets:
#   argo-rollouts-bin   build it into the cache (a no-op once built); `make bench` depends on it
#                       so that the cold build (many minutes) happens outside go test's timeout

.PHONY: argo-rollouts-bin

argo-rollouts-bin: ## Build Argo Rollouts' controller for the benchmarks into the cache.
	@$(CLUSTER_ENV) bash $(CLUSTER_REPO)/hack/argo-rollouts/build.sh
