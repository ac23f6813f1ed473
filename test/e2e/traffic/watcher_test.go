package traffic

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }

// The watcher's check fails a canary pod removed while the route in force (by resourceVersion)
// sent the canary traffic, and passes one removed after the route sent it nothing, whatever
// order the two watches delivered them in. It needs no cluster.
func TestRouteWatcherVerify(t *testing.T) {
	w := &routeWatcher{
		removals: []removal{{rv: 15, pod: "early"}, {rv: 25, pod: "late"}},
		versions: []routeVersion{
			{rv: 20, served: false, desc: "canary weight 0"},
			{rv: 10, served: true, desc: "canary weight 10"},
		},
	}
	r := &recorder{TB: t}
	if n := w.verify(r); n != 2 {
		t.Errorf("checked %d removals, want 2", n)
	}
	if len(r.errs) != 1 || r.errs[0] != "canary pod early removed (resourceVersion 15) while the route (resourceVersion 10) had canary weight 10" {
		t.Errorf("failures %q, want only the pod removed under weight 10", r.errs)
	}
}
