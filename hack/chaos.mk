# The fault-tolerance scenario of issue 17, repeated (test/e2e/fault, TestChaos, build tag chaos):
# two agents under leader election while a TApp of 30 (maxUnavailable 3) and a Canary of 20
# release; the leader frozen with SIGSTOP for 20 s (Lease 15 s) then continued, then the leader
# killed three times. Each round prints its violations; the target fails unless every round has
# none. Every agent runs bin/workload-agent as `make build` made it. Not part of `make test`
# (about two minutes a round).
#
#   make chaos              10 rounds
#   make chaos ROUNDS=3

ROUNDS ?= 10

.PHONY: chaos

chaos: cluster-bins build ## Freeze and kill the leading agent mid-rollout, ROUNDS times (default 10); print violations per round.
	WORKLOAD_AGENT_BIN=$(CURDIR)/bin/workload-agent $(or $(GO),go) test -tags chaos -count=1 -p 1 -timeout 0 -v -run '^TestChaos$$' ./test/e2e/fault/ -args -rounds=$(ROUNDS)
