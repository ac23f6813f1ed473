# Chromium for the dashboard's browser test (test/e2e/dashboard), Debian's package. See
# docs/dashboard.md.
#
# Targets:
#   chromium   install it with apt-get when missing (a no-op once installed); `make test` depends
#              on it, as on the control plane's binaries

.PHONY: chromium

chromium: ## Install Debian's chromium for the dashboard's browser test when missing.
	@bash $(or $(CLUSTER_REPO),.)/hack/chromium/install.sh

.PHONY: dashboard-screenshots
dashboard-screenshots: chromium cluster-bins ## Refresh docs/images/dashboard-*.png from the dashboard's browser test.
	DASHBOARD_SCREENSHOTS=1 $(or $(GO),go) test -count=1 -p 1 ./test/e2e/dashboard/
