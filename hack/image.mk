# The workload-agent image, built with ko (pinned in hack/tools/ko) without a container engine.
# Included by the root Makefile.
#
#   make image           bin/image: an OCI image layout holding the image for linux/amd64 and
#                        linux/arm64, on a base assembled here (no registry needed)
#   make image-publish   build on gcr.io/distroless/static:nonroot (pulled) and push to
#                        IMAGE_REPO:VERSION, the image `kubectl workload install` deploys by default
#                        (the release workflow runs it after logging in to the registry)
#
# ko and hack/tools/ko/agentbase are built into the cache on first use, once per pin of
# hack/tools/ko/go.sum.

IMAGE_REPO ?= ghcr.io/kubectl-workload/workload-agent
IMAGE_DIR ?= bin/image
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
# The released base: distroless static, user nonroot. Empty: the equivalent assembled here.
IMAGE_BASE_RELEASE ?= gcr.io/distroless/static:nonroot
IMAGE_USER ?= 65532:65532
IMAGE_PORTS ?= 8080,8081
IMAGE_TOOLS := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))/tools/ko
IMAGE_TOOLS_BIN = $(or $(KUBECTL_WORKLOAD_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubectl-workload)/tools/ko-$(shell sha256sum $(IMAGE_TOOLS)/go.sum | cut -c1-12)
KO = $(IMAGE_TOOLS_BIN)/ko
AGENTBASE = $(IMAGE_TOOLS_BIN)/agentbase
IMAGE_LABELS := --image-label org.opencontainers.image.title=workload-agent \
  --image-label org.opencontainers.image.source=https://github.com/kubectl-workload/kubectl-workload \
  --image-label org.opencontainers.image.licenses=Apache-2.0 \
  --image-label org.opencontainers.image.version=$(VERSION)
# ko reads VERSION and COMMIT in .ko.yaml's ldflags; SOURCE_DATE_EPOCH fixes the image's times.
IMAGE_ENV = VERSION=$(VERSION) COMMIT=$(COMMIT) KO_DOCKER_REPO=$(IMAGE_REPO) \
  SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_KO_BUILD = build ./cmd/agent --bare --platform=$(IMAGE_PLATFORMS) --sbom=none --tags=$(VERSION) $(IMAGE_LABELS)

.PHONY: image image-publish image-tools

image-tools: ## Build ko and agentbase (hack/tools/ko) into the cache.
	@test -x $(KO) -a -x $(AGENTBASE) || { echo "building ko and agentbase into $(IMAGE_TOOLS_BIN)"; \
	  cd $(IMAGE_TOOLS) && $(GO) build -o $(IMAGE_TOOLS_BIN)/ko github.com/google/ko && \
	  $(GO) build -o $(IMAGE_TOOLS_BIN)/agentbase ./agentbase; }

image: image-tools ## Build the agent image for linux/amd64 and linux/arm64 into bin/image (an OCI layout) with ko, no Docker.
	rm -rf $(IMAGE_DIR)
	$(IMAGE_ENV) $(AGENTBASE) -platforms $(IMAGE_PLATFORMS) -user $(IMAGE_USER) -ports $(IMAGE_PORTS) -- \
	  $(KO) $(IMAGE_KO_BUILD) --push=false --oci-layout-path=$(IMAGE_DIR)

image-publish: image-tools ## Build the agent image on distroless/static:nonroot and push it to IMAGE_REPO:VERSION.
	$(IMAGE_ENV) $(AGENTBASE) -from $(IMAGE_BASE_RELEASE) -platforms $(IMAGE_PLATFORMS) -user $(IMAGE_USER) -ports $(IMAGE_PORTS) -- \
	  $(KO) $(IMAGE_KO_BUILD) --push=true

# The image test (hack/tools/ko/imagetest) reads bin/image with go-containerregistry and compares
# it with config/agent/deployment.yaml and the plugin built from the same tree. make test sets
# TEST_TIMES (hack/testtimes) and TEST_TIMES_DIR to record the test's time with the others'.
.PHONY: test-image
test-image: image build ## Build the image and the plugin, then check the image (user, ports, entrypoint, version).
	set -o pipefail; cd $(IMAGE_TOOLS) && IMAGE_LAYOUT=$(abspath $(IMAGE_DIR)) PLUGIN=$(abspath bin/kubectl-workload) \
	  $(GO) test -count=1 $(if $(TEST_TIMES),-json) ./imagetest/ $(if $(TEST_TIMES),| $(TEST_TIMES) -record $(TEST_TIMES_DIR)/image.txt)

# Logs ko in to the image registry with the password read from standard input (the release
# workflow's token), for image-publish.
IMAGE_REGISTRY ?= $(firstword $(subst /, ,$(IMAGE_REPO)))
.PHONY: image-login
image-login: image-tools
	@$(KO) login $(IMAGE_REGISTRY) --username "$(IMAGE_REGISTRY_USER)" --password-stdin
