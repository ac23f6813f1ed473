# Local control plane: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok, built from hack/tools and run on loopback.
# See docs/testing.md.
#
# Included by the root Makefile; also usable alone:
#   make -f hack/cluster.mk cluster-up
#
# Targets:
#   cluster-bins     build the binaries into the cache (a no-op once built);
#                    `make test` (hack/test.sh) builds it first so that the cold build happens
#                    outside `go test`'s timeout
#   cluster-kubectl  also build kubectl there, and print its path
#   cluster-up       start a cluster in the background; the last line printed
#                    is `export KUBECONFIG=...`
#   cluster-down     stop it

CLUSTER_REPO := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
CLUSTER_CACHE ?= $(or $(KUBECTL_WORKLOAD_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubectl-workload)
CLUSTER_STATE_DIR ?= $(CLUSTER_CACHE)/cluster
CLUSTER_CMD := $(CLUSTER_CACHE)/bin/localcluster
# The Go side (localcluster.ResolveBinDir) calls build-bins.sh too and must
# see the same cache.
CLUSTER_ENV := KUBECTL_WORKLOAD_CACHE=$(CLUSTER_CACHE)

.PHONY: cluster-bins cluster-kubectl cluster-up cluster-down cluster-cmd

cluster-bins: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok into the cache.
	@$(CLUSTER_ENV) bash $(CLUSTER_REPO)/hack/cluster/build-bins.sh

cluster-kubectl: ## Build a matching kubectl into the cache and print its path.
	@$(CLUSTER_ENV) bash $(CLUSTER_REPO)/hack/cluster/build-bins.sh kubectl
	@echo "$$($(CLUSTER_ENV) bash $(CLUSTER_REPO)/hack/cluster/build-bins.sh --print-dir)/kubectl"

cluster-cmd:
	@cd $(CLUSTER_REPO) && $(or $(GO),go) build -o $(CLUSTER_CMD) ./test/localcluster/cmd/localcluster

# From the repository root, where the command finds config/crd.
cluster-up: cluster-bins cluster-cmd ## Start a local cluster in the background; prints export KUBECONFIG=... last.
	@cd $(CLUSTER_REPO) && $(CLUSTER_ENV) $(CLUSTER_CMD) up -state-dir $(CLUSTER_STATE_DIR)

cluster-down: cluster-cmd ## Stop the local cluster started by cluster-up.
	@$(CLUSTER_CMD) down -state-dir $(CLUSTER_STATE_DIR)
