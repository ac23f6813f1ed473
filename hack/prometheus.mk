# Prometheus for the analysis tests (test/promharness, test/e2e/analysis), built from
# hack/tools/prometheus into the cache next to the control plane. See docs/analysis.md.
#
# Included by the root Makefile after hack/cluster.mk (it shares its cache variables).
#
# Targets:
#   prometheus-bin   build it into the cache (a no-op once built); `make test` (hack/test.sh) builds it first
#                    so that the cold build (several minutes) happens outside go test's timeout

.PHONY: prometheus-bin

prometheus-bin: ## Build Prometheus for the analysis tests into the cache.
	@$(CLUSTER_ENV) bash $(CLUSTER_REPO)/hack/prometheus/build.sh
