// Package bench holds the benchmarks of bench/RESULTS.md (issues 4, 5 and 7), run by `make bench`
// on the local control plane of test/localcluster: real etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, kwok playing the kubelets of six fake nodes. They
// are Go benchmarks that print figures, never tests that assert timings: every comparison is a
// ratio of two things measured in the same run, because the machine they run on (2 cores,
// shared) is noisy.
//
//	make bench                                  # builds bin/ and the cluster binaries first
//	go test -run '^$' -bench . -benchtime=1x -timeout 120m ./test/bench/
//
// Plain `go test ./test/bench/` runs only the unit tests of the parsers below; the control plane
// is started by the first benchmark that needs it and shared by all of them, in this order:
//
//   - BenchmarkDeployment: kube-controller-manager scales a Deployment from 0 to 1000 Ready pods,
//     then rolls it to a new image; the namespace is deleted afterwards.
//   - BenchmarkTApp: the workload-agent scales a TApp from 0 to 1000 Ready instances, updates
//     every image in place, then changes the env (every pod re-created), and compares with the
//     Deployment. kube-controller-manager and the agent have the same client QPS and burst
//     (100/200, set when the cluster starts).
//   - BenchmarkUnitedDeployment: a UnitedDeployment of 3 TApp subsets × 300 instances to Ready.
//   - BenchmarkBusyNamespace: the agent's memory with the TApp's 1000 managed pods, and the
//     plugin's one-shot `status` and `get` of it (bin/kubectl-workload, 20 runs each), first
//     alone in its namespace, then with 10 000 unrelated pods (Deployments created before the
//     agent starts) in the same namespace; then the plugin also reads, in turns with it, an
//     identical TApp in a namespace of its own, so that the effect of the unrelated pods is a
//     ratio of runs made under the same load. Each plugin run is followed by its kubectl
//     counterpart (the control plane's kubectl, same HOME and discovery cache): `kubectl get
//     tapp app` for status, `kubectl get pods -l app=app` for get; the ratio of their medians
//     has issue 30's targets (status <= 0.5, get <= 0.3).
//   - BenchmarkUnrelatedObjects (issue 15): the agent's memory with no workload of its own, first
//     in an empty cluster (the namespaces of the benchmarks above are deleted first), then with
//     10 000 Deployments (replicas 0), 2000 StatefulSets (replicas 0; kube-controller-manager
//     writes a ControllerRevision for each) and 10 000 bare pods, none of them the agent's. A
//     fresh agent runs 20 s for each; the ratio of their peak RSS (VmHWM) has a target of 1.05.
//   - BenchmarkManySmall (issue 15): 2000 Deployments of 3 pods created at once, to every pod
//     Ready; the namespace is deleted; then 2000 TApps of 3 pods with the agent (same client QPS
//     and burst). Reported: time to all Ready, writes per pod, the agent's peak RSS (target
//     150 MiB). Then a new agent starts over the settled TApps and runs 20 s: its writes, from
//     the audit log, must be none. Last, the namespace deleted, the same 2000 TApps again under
//     an agent at Go's default GOGC (100, `--gc-percent=100`): issue 30's target is the deployed
//     agent's (GOGC 25) time to every pod Ready no worse than that one's, its peak RSS ≤ 150 MiB.
//   - BenchmarkCanaryRelease (issue 12): a Canary of BENCH_REPLICAS pods released in 4 steps
//     (25%, 50%, 75%, 100%) under the default maxSurge (25%) by the agent. Reported, from this
//     process's watches: peak pods of both Deployments / (replicas + maxSurge) (target ≤ 1.0),
//     fewest available / replicas (target ≥ 1.0), and the time the Canary said Completed minus
//     the time its last stable pod disappeared (target ≥ 0).
//   - BenchmarkScaleOutPair (issue 15): the scale-out from 0 to BENCH_REPLICAS Ready pods of a
//     TApp without the in-place readiness gate against a Deployment's, fairly: one agent (all
//     controllers) runs throughout, both use the same pod template, and the two alternate over
//     BENCH_ROUNDS rounds (Deployment first in odd rounds), each in a fresh namespace deleted
//     before the next phase. Reported per round and overall: TApp/Deployment time to every pod
//     Ready, and each phase's timeline from the audit log (the controller's last pod create, the
//     scheduler's last binding, kwok's last status write, and the API server's latency of each).
//     Issue 15's figure is the median of the per-round ratios (target ≤ 1.0); the ratio of the
//     sums is printed too. (BenchmarkTAppInPlace's gateless scale-out against
//     BenchmarkDeployment's is printed as well, without a target: those phases run minutes
//     apart, the agent only in the TApp's.)
//   - BenchmarkReaction (issue 30): the agent's reaction times, from this process's watches (the
//     arrival of the watch event at each end): spec change → first agent write (a probe TApp
//     scaled 1 → 2 → 1: the pod created, then deleted), pod Ready → status written (the probe's
//     new pod, then its status), promote → first new pod (a Canary over a probe TApp of 2
//     instances pausing after its first step: its approvedBatch, then the other pod's image).
//     BENCH_REACTION_ROUNDS rounds at idle; rounds without end while BENCH_SMALL_WORKLOADS TApps
//     of BENCH_SMALL_REPLICAS pods and BENCH_LOAD_CANARIES Canaries (holding the first TApps) are
//     created at once and scale out ("busy"); as many rounds again once they are settled
//     ("loaded"). Printed: p50, p99 and extremes of each; over the load's scale-out, each TApp's
//     status lag (its last pod Ready → its status complete; p99 target 2 s) and the agent's CPU
//     seconds per 1000 pod events (events of the load's pods seen by this process's watch).
//   - BenchmarkVsArgoRollouts (issue 30): the same release of BENCH_REPLICAS pods in 4 steps by
//     Argo Rollouts' controller (built from its Go module: hack/tools/argo-rollouts, `make
//     argo-rollouts-bin`) and by the agent, in turns: Argo with its defaults, with
//     maxUnavailable 0, and paused at 25% then promoted in full; the agent's Canary in pair
//     form, and paused at 25% then `promote --full`. Reported per release: the controller's CPU
//     seconds, its own writes without Events (audit log), its peak RSS, the release time, the
//     fewest available and most live pods; then the agent/Argo ratios of the run.
//
// Each phase reports: the wall time until every pod is in its final state (Ready on the new
// template, seen by a watch) and until the workload's status says so; the pod writes counted
// from the API server's apiserver_request_total (every client: the controller, kube-scheduler's
// bindings, kwok's status updates), and the same writes by client from an audit log the API
// server writes at the Metadata level for writes only (apiserver_request_total has no client
// label); the controller-object writes (Deployments, ReplicaSets, TApps, ... and their status)
// and Events; and the agent's peak RSS (VmHWM, reset at the start of the phase).
//
// Settings (environment variables; the defaults are the documented scenarios):
//
//	BENCH_REPLICAS=1000      TApp and Deployment size, and managed pods of BenchmarkBusyNamespace
//	BENCH_UD_SUBSET=300      instances per UnitedDeployment subset
//	BENCH_UNRELATED=10000    unrelated pods of BenchmarkBusyNamespace and BenchmarkUnrelatedObjects
//	BENCH_UNRELATED_DEPLOYMENTS=10000   unrelated Deployments of BenchmarkUnrelatedObjects
//	BENCH_UNRELATED_STATEFULSETS=2000   unrelated StatefulSets (one ControllerRevision each) of it;
//	                                    its unrelated pods are BENCH_UNRELATED
//	BENCH_SMALL_WORKLOADS=2000          TApps, and Deployments, of BenchmarkManySmall
//	BENCH_SMALL_REPLICAS=3              pods of each (and of BenchmarkReaction's load)
//	BENCH_LOAD_CANARIES=500             Canaries of BenchmarkReaction's load (TApp targets)
//	BENCH_REACTION_ROUNDS=20            probe rounds of BenchmarkReaction at idle and loaded
//	BENCH_PLUGIN_RUNS=20     runs of each plugin command
//	BENCH_ROUNDS=3           Deployment/TApp rounds of BenchmarkScaleOutPair
//	BENCH_QPS=100            client QPS of kube-controller-manager and the agent
//	BENCH_BURST=200          ... and burst
//	BENCH_AGENT_MEMORY_LIMIT=         every agent's --memory-limit (e.g. 128Mi); unset: the agent's default
//	BENCH_TIMEOUT=20m        safety bound of every wait (a failure, never a target)
//	BENCH_OUT_DIR=<tmp>      agent logs and summary.md (the audit log too, with BENCH_KEEP_AUDIT=1)
//	WORKLOAD_AGENT_BIN, KUBECTL_WORKLOAD_BIN   binaries to run instead of building them
//	BENCH_BASELINE_AGENT_BIN=  another agent build BenchmarkVsArgoRollouts also runs, for ratios
//	ARGO_ROLLOUTS_DIR=         Argo Rollouts' controller and crds/ (default: built into the cache)
//
// The scenery of the scale benchmarks is created by the benchmark's own client at 500 QPS (not
// measured). A quick try-out of them:
//
//	make bench BENCH='BenchmarkUnrelatedObjects|BenchmarkManySmall' BENCH_ENV='BENCH_UNRELATED_DEPLOYMENTS=200 BENCH_UNRELATED_STATEFULSETS=20 BENCH_UNRELATED=200 BENCH_SMALL_WORKLOADS=20'
//	make bench BENCH=BenchmarkReaction BENCH_ENV='BENCH_SMALL_WORKLOADS=100 BENCH_LOAD_CANARIES=25 BENCH_REACTION_ROUNDS=5'
//
// bench/RESULTS.md holds the results of a run with the exact command.
package bench
