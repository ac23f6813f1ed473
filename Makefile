# kubectl-workload — every target a developer or CI needs. `make test` is the test command:
# it builds whatever it needs (the local control plane binaries included) by itself.

SHELL := /usr/bin/env bash
GO ?= go
MODULE := $(shell $(GO) list -m)
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.1.0-dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X $(MODULE)/pkg/version.Version=$(VERSION) -X $(MODULE)/pkg/version.GitCommit=$(COMMIT)
# End-to-end packages start a control plane each; give them room on a 2-core machine. They run
# with -count=1: their result depends on binaries and a cluster that go test's cache cannot see.
TEST_TIMEOUT ?= 60m
# End-to-end packages run at once (each starts its own control plane); docs/testing.md says why 1.
TEST_E2E_P ?= 1

.PHONY: all build test test-unit test-e2e generate verify fmt vet clean help

all: build

help: ## List the targets.
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## Build bin/kubectl-workload and bin/workload-agent.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/kubectl-workload ./cmd/kubectl-workload
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/workload-agent ./cmd/agent

test: ## Run every test: the agent image's test, unit tests, then end-to-end tests on a local control plane; prints each package's time.
	GO=$(GO) TEST_TIMEOUT=$(TEST_TIMEOUT) TEST_E2E_P=$(TEST_E2E_P) MODULE=$(MODULE) hack/test.sh

test-unit: ## Run the unit tests only (no control plane).
	$(GO) test -race $$($(GO) list ./... | grep -v /test/)

test-e2e: ## Run the end-to-end tests only (builds the control plane first when missing).
test-e2e: cluster-bins cluster-kubectl prometheus-bin chromium
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -p $(TEST_E2E_P) ./test/...

generate: ## Regenerate deepcopy, clientset, listers, informers and CRDs.
	hack/update-codegen.sh

verify: ## Fail when gofmt or go vet complain, or generated code or CRDs are stale.
	hack/verify.sh

clean: ## Remove build outputs (the control plane cache stays; see docs/testing.md).
	rm -rf bin dist

-include hack/cluster.mk
-include hack/prometheus.mk
-include hack/argo-rollouts.mk
-include hack/dist.mk
-include hack/bench.mk
-include hack/demo.mk
-include hack/image.mk
-include hack/chaos.mk
-include hack/chromium.mk
