# make demo / make demo-down: a release of each kind on the local control plane, narrated
# (hack/demo.sh). Included by the root Makefile; also usable alone: make -f hack/demo.mk demo
#
#   demo       build what is missing, start the control plane and the workload-agent in the
#              background, install the CRDs and RBAC, apply examples/ and walk through a release
#              with the plugin, printing each command; everything keeps running afterwards
#   demo-down  stop the agent and the control plane; nothing is left running
#
# State (kubeconfig, logs, pids): $(DEMO_STATE_DIR), default
# $${XDG_CACHE_HOME:-~/.cache}/kubectl-workload/demo, apart from make cluster-up's cluster.

DEMO_REPO := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
DEMO_CACHE ?= $(or $(KUBECTL_WORKLOAD_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubectl-workload)
DEMO_STATE_DIR ?= $(DEMO_CACHE)/demo
DEMO_ENV := KUBECTL_WORKLOAD_CACHE=$(DEMO_CACHE) DEMO_STATE_DIR=$(DEMO_STATE_DIR)

.PHONY: demo demo-down

demo: ## Start a local cluster and the agent, and walk through a release of each kind (make demo-down stops it).
	@$(DEMO_ENV) bash $(DEMO_REPO)/hack/demo.sh up

demo-down: ## Stop the demo's agent and cluster.
	@$(DEMO_ENV) bash $(DEMO_REPO)/hack/demo.sh down
