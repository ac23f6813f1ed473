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
// one that replaces pods in place), and pods of
// any state but finished never exceed the ceiling. Both follow the total the test sets with
// SetTotal, the way the autoscaler it drives will set it, in the direction that can only be
// reached over time:
//   - a lowered total lowers the floor at once; a raised one raises it as pods become ready
//     (the floor is the most ready pods seen, up to the total): a new pod need not exist yet,
//     but once ready it may not be lost;
//   - a raised total raises the ceiling (total + maxSurge) at once; a lowered one lowers it as
//     pods go (the ceiling is the fewest pods seen, down to total + maxSurge): the pods of the
//     old total may finish terminating, but none may be added above the new one.
//
// Call SetTotal before changing what drives the autoscaler, so that no reaction to the change
// can be seen before the watcher knows it.
type Moving struct {
	*Watcher
	surge, unavailable int32
	total              int32
	floor, ceiling     int32
}

// ReleaseFollowing starts a Moving watcher at total, maxSurge and maxUnavailable. Start it once
// the pods of the total are available.
func ReleaseFollowing(ctx context.Context, kube kubernetes.Interface, ns, selector string, total, maxSurge, maxUnavailable int32) *Moving {
	m := &Moving{surge: maxSurge, unavailable: maxUnavailable, total: total, ceiling: math.MaxInt32}
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
		score: func(store cache.Store) int { ready, _ := count(store); return int(m.total - ready) },
		check: func(store cache.Store) ([]string, string) {
			ready, pods := count(store)
			desc := fmt.Sprintf("%d ready of %d pods, total %d (floor %d, ceiling %d)", ready, pods, m.total, m.floor, m.ceiling)
			var vs []string
			if ready < m.floor-m.unavailable {
				vs = append(vs, "available below the total: "+desc)
			}
			if pods > m.ceiling {
				vs = append(vs, "pods above total + maxSurge: "+desc)
			}
			m.floor = max(m.floor, min(m.total, ready))
			m.ceiling = min(m.ceiling, max(m.total+m.surge, pods))
			return vs, desc
		},
	}
	start(ctx, kube, podListWatch(kube, ns, selector), &corev1.Pod{}, m.Watcher)
	return m
}

// SetTotal moves the total the watcher holds the release to (see Moving).
func (m *Moving) SetTotal(total int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total = total
	m.floor = min(m.floor, total)
	m.ceiling = max(m.ceiling, total+m.surge)
}
