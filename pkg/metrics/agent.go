package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubectl-workload/kubectl-workload/pkg/version"
)

var (
	leader = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "workload_agent_leader",
		Help: "1 while this agent process runs the controllers (it holds the leader Lease, or leader election is disabled), else 0.",
	})

	cachesSynced = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "workload_agent_caches_synced",
		Help: "1 once the informer caches of a leading agent have synced, else 0.",
	})

	buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "workload_agent_build_info",
		Help: "Always 1; the labels describe the build.",
	}, []string{"version", "git_commit", "go_version"})
)

func init() {
	Registry.MustRegister(leader, cachesSynced, buildInfo)
	v := version.Get()
	buildInfo.WithLabelValues(v.Version, v.GitCommit, v.GoVersion).Set(1)
}

// SetLeader publishes whether this process is the active agent.
func SetLeader(leading bool) {
	leader.Set(boolFloat(leading))
}

// SetCachesSynced publishes whether the leader's informer caches have synced.
func SetCachesSynced(synced bool) {
	cachesSynced.Set(boolFloat(synced))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
