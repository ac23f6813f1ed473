# Release artifacts: archives per platform and the krew manifest. Included by the root Makefile
# (-include hack/dist.mk); also usable alone: make -f hack/dist.mk dist
#
#   make dist            build dist/kubectl-workload_<version>_<os>_<arch>.tar.gz (.zip for
#                        Windows) for linux, darwin and windows x amd64 and arm64, each holding
#                        the binary, the kubectl_complete-workload script and LICENSE, plus
#                        dist/SHA256SUMS
#   make krew-manifest   write dist/workload.yaml, the krew manifest, from
#                        krew.yaml and the archives of DIST_PLATFORMS (real sha256 sums,
#                        download URLs under KREW_BASE_URL, caveats telling how to put
#                        kubectl_complete-workload on PATH); refuses, naming them, when an
#                        archive of DIST_PLATFORMS is missing
#   make krew-validate   check dist/workload.yaml under krew's and krew-index's rules
#   make krew-install    build this machine's archive and its manifest into bin/krew-install
#                        and install them with kubectl krew (krew checks the archive against
#                        the manifest's platform of the machine it runs on)
#
# DIST_PLATFORMS (os/arch, space separated) narrows dist and krew-manifest alike:
#   make dist krew-manifest DIST_PLATFORMS=linux/amd64
#
# Builds are reproducible: CGO_ENABLED=0, -trimpath, no VCS stamp or build id, and archives with
# fixed timestamps (SOURCE_DATE_EPOCH, by default the commit's time), owner 0:0 and file order;
# the same commit gives the same sums.

GO ?= go
DIST_DIR ?= dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DIST_MODULE := github.com/kubectl-workload/kubectl-workload
KREW_TEMPLATE := krew.yaml
KREW_MANIFEST := $(DIST_DIR)/workload.yaml
# The release version: the v* tag on HEAD when there is one, else the version the krew template
# names (the next release).
ifndef DIST_VERSION
DIST_VERSION := $(shell git describe --tags --match 'v[0-9]*' --exact-match 2>/dev/null || sed -n 's/^  version: *//p' $(KREW_TEMPLATE))
endif
ifndef DIST_COMMIT
DIST_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
endif
DIST_LDFLAGS := -s -w -buildid= -X $(DIST_MODULE)/pkg/version.Version=$(DIST_VERSION) -X $(DIST_MODULE)/pkg/version.GitCommit=$(DIST_COMMIT)
KREW_BASE_URL ?= https://github.com/kubectl-workload/kubectl-workload/releases/download/$(DIST_VERSION)
ifndef SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 315532800)
endif
export SOURCE_DATE_EPOCH

# This machine's platform, whatever GOOS and GOARCH say (krew-install runs the result here).
HOST_PLATFORM := $(shell $(GO) env GOHOSTOS)/$(shell $(GO) env GOHOSTARCH)
KREW_INSTALL_DIR ?= bin/krew-install

.PHONY: dist krew-manifest krew-validate krew-install

dist: ## Build release archives (binary, completion script, LICENSE) for linux/darwin/windows x amd64/arm64 into dist/.
	@test -n "$(DIST_VERSION)" || { echo "dist: no version: tag HEAD (git tag v0.1.0) or set DIST_VERSION" >&2; exit 1; }
	rm -rf $(DIST_DIR)
	@set -e; for p in $(DIST_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; if [ $$os = windows ]; then ext=.exe; fi; \
	  bin=$(DIST_DIR)/bin/$${os}_$${arch}/kubectl-workload$$ext; \
	  echo "build $$bin ($(DIST_VERSION))"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=false -ldflags '$(DIST_LDFLAGS)' -o $$bin ./cmd/kubectl-workload; \
	  $(GO) run ./hack/release archive -os $$os -arch $$arch -version $(DIST_VERSION) -bin $$bin -out $(DIST_DIR); \
	done
	$(GO) run ./hack/release checksums -version $(DIST_VERSION) -dist $(DIST_DIR)

krew-manifest: ## Write dist/workload.yaml, the krew manifest (version, caveats, platforms, sha256 sums), from the archives make dist built.
	$(GO) run ./hack/release krew -version $(DIST_VERSION) -dist $(DIST_DIR) -base-url $(KREW_BASE_URL) -template $(KREW_TEMPLATE) -out $(KREW_MANIFEST) -platforms '$(DIST_PLATFORMS)'

krew-validate: ## Check dist/workload.yaml under krew's and krew-index's rules (platforms, file name, caveats).
	$(GO) run ./hack/release validate -krew-index -manifest $(KREW_MANIFEST)

krew-install: ## Build this machine's archive and its krew manifest into bin/krew-install, then install them with kubectl krew.
	$(MAKE) -f $(firstword $(MAKEFILE_LIST)) dist krew-manifest DIST_PLATFORMS=$(HOST_PLATFORM) DIST_DIR=$(KREW_INSTALL_DIR) DIST_VERSION=$(DIST_VERSION)
	$(GO) run ./hack/release krew-install -version $(DIST_VERSION) -dist $(KREW_INSTALL_DIR)
