package invariant

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

// Moving is the capacity and surge watcher of a release whose total an autoscaler moves: over
// the pods of selector, Ready and not terminating pods never fall below the floor (less
// maxUnavailable: 0 for a release that adds pods before it removes any, the workload's own for
// one that replaces pods in place), and pods of any state but finished never exceed the
// ceiling. Both follow the total in two moves, because the workload learns a new total some
// time after the test drives it (the autoscaler's next sync, then the agent's):
//   - Expect(n), called before the test changes what drives the autoscaler, only loosens the
//     bounds: a lowered total lowers the floor at once, a raised one raises the ceiling
//     (total + maxSurge) at once. Until the workload acts on n it may still act on the old
//     total, so the old ceiling and floor still bound it too.
//   - Follow(n), called once the workload has observed n, tightens them: the floor rises with
//     the ready pods up to n (a new pod need not exist yet, but once ready it may not be lost),
//     and the ceiling comes down with the pods to n + maxSurge (the pods of the old total may
//     finish terminating, but none may be added above the new one).
type Moving struct {
	*Watcher
	surge, unavailable int32
	// floorTotal caps the floor, ceilingTotal sets the ceiling (see Expect and Follow).
	floorTotal, ceilingTotal int32
	floor, ceiling           int32
}

// ReleaseFollowing starts a Moving watcher at total, maxSurge and maxUnavailable. Start it once
// the pods of the total are available.
func ReleaseFollowing(ctx context.Context, kube kubernetes.Interface, ns, selector string, total, maxSurge, maxUnavailable int32) *Moving {
	m := &Moving{surge: maxSurge, unavailable: maxUnavailable, floorTotal: total, ceilingTotal: total, ceiling: math.MaxInt32}
	count := func(store cache.Store) (ready, pods int32) {
		for _, o := range store.List() {
			p := o.(*corev1.Pod)
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			pods++
			if p.DeletionTimestamp == nil && e2eenv.PodReady(p) {
				ready++
			}
		}
		return ready, pods
	}
	m.Watcher = &Watcher{
		score: func(store cache.Store) int { ready, _ := count(store); return int(m.floor - ready) },
		check: func(store cache.Store) ([]string, string) {
			ready, pods := count(store)
			desc := fmt.Sprintf("%d ready of %d pods (floor %d of a total %d, ceiling %d of a total %d)", ready, pods, m.floor, m.floorTotal, m.ceiling, m.ceilingTotal)
			var vs []string
			if ready < m.floor-m.unavailable {
				vs = append(vs, "available below the total: "+desc)
			}
			if pods > m.ceiling {
				vs = append(vs, "pods above total + maxSurge: "+desc)
			}
			m.floor = max(m.floor, min(m.floorTotal, ready))
			m.ceiling = min(m.ceiling, max(m.ceilingTotal+m.surge, pods))
			return vs, desc
		},
	}
	start(ctx, kube, podListWatch(kube, ns, selector), &corev1.Pod{}, m.Watcher)
	return m
}

// Expect loosens the bounds for a total of n that the workload has not acted on yet (see Moving).
func (m *Moving) Expect(n int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.floorTotal, m.floor = min(m.floorTotal, n), min(m.floor, n)
	m.ceilingTotal, m.ceiling = max(m.ceilingTotal, n), max(m.ceiling, n+m.surge)
}

// Follow holds the workload to the total n it has observed (see Moving).
func (m *Moving) Follow(n int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.floorTotal, m.floor = n, min(m.floor, n)
	m.ceilingTotal, m.ceiling = n, max(m.ceiling, n+m.surge)
}
