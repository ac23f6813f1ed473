#!/usr/bin/env bash
# make demo: a release of each kind, end to end, on the local control plane.
#
#   hack/demo.sh up     build what is missing, start the control plane and the agent in the
#                       background, install the CRDs and the agent's RBAC, apply examples/ and walk
#                       through a release with the plugin, printing each command before it runs.
#                       Leaves everything running and says how to explore it.
#   hack/demo.sh down   stop the agent and the control plane (make demo-down).
#
# Everything lives in the state directory, ${KUBECTL_WORKLOAD_CACHE:-~/.cache/kubectl-workload}/demo
# (DEMO_STATE_DIR overrides it): the cluster's pid, kubeconfig and logs (as for make cluster-up,
# whose command this reuses), agent.pid and agent.log, and bin/ with kubectl and the plugin.
# Any failing step stops the demo with a non-zero exit, saying what failed.
set -eEuo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${KUBECTL_WORKLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-workload}
export KUBECTL_WORKLOAD_CACHE=$cache
state=${DEMO_STATE_DIR:-$cache/demo}
localcluster=$cache/bin/localcluster
agent_pid_file=$state/agent.pid
agent_log=$state/agent.log
# The agent's metrics and health endpoints, on loopback (in a cluster: :8080 and :8081).
metrics_port=${DEMO_METRICS_PORT:-18080}
health_port=${DEMO_HEALTH_PORT:-18081}
# Every wait gives up after this long.
timeout=${DEMO_TIMEOUT:-3m}

if [[ -t 1 && -z ${NO_COLOR:-} ]]; then
	bold=$'\e[1m' dim=$'\e[2m' blue=$'\e[34m' red=$'\e[31m' reset=$'\e[0m'
else
	bold='' dim='' blue='' red='' reset=''
fi

# say prints a line of narration.
say() { printf '\n%s==> %s%s\n' "$blue$bold" "$*" "$reset"; }
# note prints a remark under a command's output.
note() { printf '%s    %s%s\n' "$dim" "$*" "$reset"; }

# show prints a command as a person would type it.
show() {
	local out=() a
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ || $a =~ ^(\>|2\>|\||\&) || $a == *'$('* ]]; then
			out+=("$a") # plain, a redirection, or a substitution shown as typed
		else
			out+=("'${a//\'/\'\\\'\'}'")
		fi
	done
	printf '%s+ %s%s\n' "$bold" "${out[*]}" "$reset"
	shown="${out[*]}"
}
shown=''

# run prints a command, then runs it; the script stops if it fails.
run() {
	show "$@"
	"$@"
	shown=''
}

# run_expect CODE cmd...: prints and runs a command that must exit with CODE.
run_expect() {
	local want=$1 code=0
	shift
	show "$@"
	"$@" || code=$?
	if ((code != want)); then
		fail "exit code $code, expected $want: $*"
	fi
	note "(exit code $code)"
	shown=''
}

# run_until SECONDS cmd...: prints a command, then runs it until it succeeds, for at most SECONDS;
# prints the output of its last run.
run_until() {
	local limit=$1 out='' code=1
	shift
	show "$@"
	local deadline=$((SECONDS + limit))
	while ((SECONDS < deadline)); do
		code=0
		out=$("$@" 2>&1) || code=$?
		((code == 0)) && break
		sleep 1
	done
	[[ -n $out ]] && printf '%s\n' "$out"
	((code == 0)) || fail "still failing after ${limit}s (exit code $code): $*"
	shown=''
}

failed=''
fail() {
	failed=1
	printf '\n%sdemo failed: %s%s\n' "$red$bold" "$*" "$reset" >&2
	if [[ -f $agent_log ]]; then
		printf '\nlast lines of the agent log (%s):\n' "$agent_log" >&2
		tail -n 20 "$agent_log" >&2 || true
	fi
	printf '\nWhat is running stays up for a look (export KUBECONFIG=%s); make demo-down stops it.\n' "$state/kubeconfig" >&2
	exit 1
}
on_err() {
	local code=$? cmd=$BASH_COMMAND
	[[ -n $failed ]] && exit "$code"
	if [[ -n $shown ]]; then
		fail "exit code $code from: $shown"
	fi
	fail "exit code $code from: $cmd (hack/demo.sh line ${BASH_LINENO[0]})"
}

# alive PID: is the process running (a zombie does not count)?
alive() {
	[[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null || return 1
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0 # no /proc: kill -0 has to do
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]]
}

# http_ok PATH PORT: does 127.0.0.1:PORT answer 200 to GET PATH? (bash only: no curl needed)
http_ok() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$2" || exit 1
		printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&3
		IFS= read -r -t 5 status <&3 || exit 1
		[[ $status == *" 200 "* ]]
	) 2>/dev/null
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop_agent() {
	local pid
	pid=$(cat "$agent_pid_file" 2>/dev/null || true)
	if alive "$pid"; then
		echo "stopping the workload-agent (pid $pid)"
		# SIGTERM: the agent stops its controllers, releases its Lease and exits.
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 300); do
			alive "$pid" || break
			sleep 0.1
		done
		if alive "$pid"; then
			echo "the agent did not stop within 30s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$agent_pid_file"
}

down() {
	stop_agent
	if [[ -x $localcluster ]]; then
		"$localcluster" down -state-dir "$state"
	elif [[ -f $state/pid ]]; then
		# The cluster command was removed since: stop the cluster process by its pid file.
		local pid
		pid=$(cat "$state/pid")
		alive "$pid" && kill -TERM "$pid"
		for _ in $(seq 600); do alive "$pid" || break; sleep 0.1; done
	fi
	local left=()
	for f in "$agent_pid_file" "$state/pid"; do
		pid=$(cat "$f" 2>/dev/null || true)
		alive "$pid" && left+=("$pid")
	done
	if ((${#left[@]})); then
		echo "still running: ${left[*]}" >&2
		exit 1
	fi
	echo "demo stopped; nothing left running (logs in $state)"
}

up() {
	trap on_err ERR
	local start=$SECONDS
	cd "$repo"

	if [[ -f $state/pid || -f $agent_pid_file ]]; then
		say "A demo is running or was left behind: stopping it first, for a fresh start"
		down
	fi

	say "Building the plugin, the agent, the local control plane and kubectl (once; later runs reuse them)"
	run make --no-print-directory build
	run hack/cluster/build-bins.sh etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl
	run go build -o "$localcluster" ./test/localcluster/cmd/localcluster
	local bindir
	bindir=$(hack/cluster/build-bins.sh --print-dir)

	say "Starting the local control plane in the background: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and kwok playing the kubelet of 6 nodes in zones a, b and c"
	# No CRDs yet: the plugin installs them below.
	show "$localcluster" up -state-dir "$state" -crd-dir=
	"$localcluster" up -state-dir "$state" -crd-dir= | sed 's/make cluster-down/make demo-down/'
	shown=''
	export KUBECONFIG=$state/kubeconfig
	# kubectl finds the plugin on PATH as kubectl-workload: that is all a krew install does.
	mkdir -p "$state/bin"
	ln -sf "$bindir/kubectl" "$state/bin/kubectl"
	ln -sf "$repo/bin/kubectl-workload" "$state/bin/kubectl-workload"
	export PATH=$state/bin:$PATH
	run kubectl get nodes -L topology.kubernetes.io/zone

	say "Installing the CRDs with the plugin, and the agent's namespace, ServiceAccount and RBAC from config/agent"
	note "(in a real cluster, 'kubectl workload install' also deploys the agent; kwok pods run no process, so here the agent runs on this machine)"
	run kubectl workload install --crds-only
	# (kubectl wait gives up at once on a CRD the API server has not given conditions yet: retry)
	run_until 60 kubectl wait --for=condition=Established --timeout=30s \
		crd/tapps.apps.workload.dev crd/uniteddeployments.apps.workload.dev crd/canaries.apps.workload.dev
	run kubectl apply --server-side --field-manager=kubectl-workload \
		-f config/agent/namespace.yaml -f config/agent/service_account.yaml \
		-f config/agent/cluster_role.yaml -f config/agent/cluster_role_binding.yaml \
		-f config/agent/leader_election.yaml

	say "Starting the workload-agent in the background, as its ServiceAccount (a token from the TokenRequest API), so it has exactly the RBAC of config/agent"
	local server
	server=$(kubectl config view --minify -o 'jsonpath={.clusters[0].cluster.server}')
	kubectl config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$state/ca.crt"
	show kubectl create token workload-agent -n workload-system --duration=24h '>' "$state/agent.token"
	kubectl create token workload-agent -n workload-system --duration=24h >"$state/agent.token"
	shown=''
	local kc=$state/agent.kubeconfig
	rm -f "$kc"
	run kubectl config --kubeconfig="$kc" set-cluster local --server="$server" --certificate-authority="$state/ca.crt" --embed-certs
	show kubectl config --kubeconfig="$kc" set-credentials workload-agent --token='"$(cat '"$state/agent.token"')"'
	kubectl config --kubeconfig="$kc" set-credentials workload-agent --token="$(cat "$state/agent.token")" >/dev/null
	shown=''
	run kubectl config --kubeconfig="$kc" set-context agent --cluster=local --user=workload-agent
	run kubectl config --kubeconfig="$kc" use-context agent
	while ! port_free "$metrics_port" || ! port_free "$health_port"; do
		metrics_port=$((metrics_port + 2)) health_port=$((health_port + 2))
	done
	local agent_args=(--kubeconfig="$kc" --leader-elect-namespace=workload-system
		--metrics-addr="127.0.0.1:$metrics_port" --health-addr="127.0.0.1:$health_port")
	show bin/workload-agent "${agent_args[@]}" '>' "$agent_log" '2>&1 &'
	# Its own session: it outlives this script and make, until make demo-down.
	setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$agent_pid_file" \
		"$repo/bin/workload-agent" "${agent_args[@]}" >"$agent_log" 2>&1 </dev/null &
	shown=''
	local i pid
	for i in $(seq 600); do
		pid=$(cat "$agent_pid_file" 2>/dev/null || true)
		if [[ -n $pid ]] && ! alive "$pid"; then
			fail "the agent exited at start"
		fi
		[[ -n $pid ]] && http_ok /readyz "$health_port" && break
		((i < 600)) || fail "the agent did not become ready within 60s"
		sleep 0.1
	done
	note "agent pid $pid, ready: leads (Lease workload-system/workload-agent) with its caches synced; /metrics on 127.0.0.1:$metrics_port"

	say "Applying examples/: a TApp, a UnitedDeployment of StatefulSets over the three zones, and a Canary with its stable Deployment"
	run kubectl apply --server-side -f examples/tapp.yaml -f examples/uniteddeployment-statefulset.yaml -f examples/canary.yaml
	say "Waiting for each rollout with the plugin: status -w follows it and exits 0 when complete (2 if --timeout passes first)"
	run kubectl workload status tapp/gameserver -w --timeout="$timeout"
	run kubectl workload status ud/orders -w --timeout="$timeout"
	note "The Canary moves one batch, then waits for a person (pauseType: First); --success-on-pause ends the wait there"
	run kubectl workload status canary/checkout -w --timeout="$timeout" --success-on-pause
	run kubectl workload list

	say "TApp: instances with stable ids. A new image is rolled out in place: same pods, containers restarted"
	run kubectl workload get tapp/gameserver
	run kubectl workload set-partition tapp/gameserver 2
	note "partition 2: instances 0 and 1 keep their pods; 2 and 3 get the new image (4 runs the pool's debug template, which this change does not touch)"
	run kubectl workload set image tapp/gameserver server=nginx:1.28
	run kubectl workload status tapp/gameserver -w --timeout="$timeout" --success-on-pause
	run kubectl get pods -l app=gameserver \
		-o custom-columns='POD:.metadata.name,IMAGE:.spec.containers[0].image,RESTARTS:.status.containerStatuses[0].restartCount,UID:.metadata.uid'
	note "Status exit code 3 (without -w): the release is held by the partition"
	run_expect 3 kubectl workload status tapp/gameserver
	run kubectl workload set-partition tapp/gameserver 0
	run kubectl workload status tapp/gameserver -w --timeout="$timeout"
	say "TApp: stop one instance by id, then start it again"
	run kubectl workload kill-instance tapp/gameserver 1
	run kubectl workload status tapp/gameserver -w --timeout="$timeout"
	run kubectl get pods -l app=gameserver
	run kubectl workload start-instance tapp/gameserver 1
	run kubectl workload status tapp/gameserver -w --timeout="$timeout"

	say "UnitedDeployment: release zone by zone. Hold zone-b and zone-c with partitions, change the image, check zone-a"
	run kubectl workload set-partition ud/orders zone-b=3 zone-c=4
	run kubectl workload set image ud/orders orders=nginx:1.28
	run kubectl workload status ud/orders -w --timeout="$timeout" --success-on-pause
	run kubectl workload get ud/orders
	note "zone-a is on the new revision; release zone-b next, then the rest"
	run kubectl workload promote ud/orders --subset zone-b
	run kubectl workload status ud/orders -w --timeout="$timeout" --success-on-pause
	run kubectl workload promote ud/orders --all
	run kubectl workload status ud/orders -w --timeout="$timeout"
	run kubectl workload history ud/orders

	say "Canary: batch 1 runs 1 canary pod next to the stable Deployment; promote approves the next batches"
	run kubectl workload get canary/checkout
	run kubectl workload promote canary/checkout
	run kubectl workload status canary/checkout -w --timeout="$timeout"
	run kubectl get deployments -L apps.workload.dev/canary

	say "Canary, automated: steps with timed pauses and checks (podHealth, a Job); nobody promotes"
	run kubectl apply --server-side -f hack/demo/canary-automated.yaml
	note "payments: each step bakes for its pause while its checks measure, then goes on by itself"
	run kubectl workload status canary/payments -w --timeout="$timeout"
	run kubectl get jobs -l app.kubernetes.io/managed-by=workload-agent
	note "search: its canary's containers keep restarting; podHealth fails and the release rolls back by itself"
	run kubectl wait canary/search --for=jsonpath='{.status.phase}'=RolledBack --timeout="$timeout"
	run kubectl get canary search -o jsonpath='{.status.abort.reason}{": "}{.status.abort.message}{"\n"}'
	run kubectl workload list
	run kubectl get workload

	trap - ERR
	local took=$((SECONDS - start))
	say "Done in $((took / 60))m$((took % 60))s. The cluster and the agent keep running; explore them:"
	cat <<EOF

  export KUBECONFIG=$state/kubeconfig
  export PATH=$state/bin:\$PATH   # kubectl and the plugin

  kubectl workload list
  kubectl workload get ud/orders
  kubectl workload status canary/search
  kubectl workload set image canary/search search=nginx:1.28 && kubectl workload retry canary/search
  kubectl workload abort canary/checkout
  kubectl workload undo tapp/gameserver
  kubectl workload status tapp/gameserver -w
  kubectl get events --sort-by=.lastTimestamp

  The agent's log: $agent_log
  Its metrics: http://127.0.0.1:$metrics_port/metrics

Stop everything (the agent and the control plane): make demo-down
EOF
}

case ${1:-up} in
up) up ;;
down) down ;;
*)
	echo "usage: $0 [up|down]" >&2
	exit 2
	;;
esac
