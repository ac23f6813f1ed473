package instance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// objects holds a TApp web of 5 instances whose spec.statuses is `statuses` (nil: absent), an
// empty TApp of 0 replicas, and a Canary.
func objects(statuses map[string]v1alpha1.InstanceDesiredStatus) []runtime.Object {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace}
	}
	web := &v1alpha1.TApp{ObjectMeta: meta("web")}
	web.Spec.Replicas = ptr.To[int32](5)
	web.Spec.Statuses = statuses
	empty := &v1alpha1.TApp{ObjectMeta: meta("empty")}
	empty.Spec.Replicas = ptr.To[int32](0)
	one := &v1alpha1.TApp{ObjectMeta: meta("one")} // replicas defaults to 1
	canary := &v1alpha1.Canary{ObjectMeta: meta("checkout")}
	return []runtime.Object{web, empty, one, canary}
}

// unchanged lists the cases that succeed without changing anything.
var unchanged = map[string]bool{
	"kill-already-killed": true, "kill-all-already-killed": true, "kill-dry-run-client": true,
	"start-not-killed": true, "start-no-statuses": true, "start-dry-run-client": true,
}

func TestKillAndStartInstance(t *testing.T) {
	killed := map[string]v1alpha1.InstanceDesiredStatus{"2": v1alpha1.InstanceKilled, "4": v1alpha1.InstanceKilled}
	tests := []struct {
		name     string
		start    bool
		statuses map[string]v1alpha1.InstanceDesiredStatus
		args     []string
	}{
		{"kill-first-instance", false, nil, []string{"tapp/web", "3"}},
		{"kill-type-name-form", false, nil, []string{"tapp", "web", "3"}},
		{"kill-several", false, nil, []string{"tapp/web", "4", "0", "4"}},
		{"kill-with-statuses", false, killed, []string{"tapp/web", "3"}},
		{"kill-running-entry", false, map[string]v1alpha1.InstanceDesiredStatus{"3": v1alpha1.InstanceRunning}, []string{"tapp/web", "3"}},
		{"kill-some-already-killed", false, killed, []string{"tapp/web", "1", "2"}},
		{"kill-already-killed", false, killed, []string{"tapp/web", "2"}},
		{"kill-all-already-killed", false, killed, []string{"tapp/web", "4", "2"}},
		{"kill-default-replicas", false, nil, []string{"tapp/one", "0"}},
		{"kill-dry-run-client", false, killed, []string{"tapp/web", "3", "--dry-run=client"}},
		{"kill-dry-run-server", false, nil, []string{"tapp/web", "3", "--dry-run=server"}},
		{"start-instance", true, killed, []string{"tapp/web", "2"}},
		{"start-several", true, killed, []string{"tapp/web", "4", "2"}},
		{"start-some-not-killed", true, killed, []string{"tapp/web", "1", "2"}},
		{"start-not-killed", true, killed, []string{"tapp/web", "3"}},
		{"start-no-statuses", true, nil, []string{"tapp/web", "3"}},
		{"start-dry-run-client", true, killed, []string{"tapp/web", "2", "--dry-run=client"}},
		{"error-kill-out-of-range", false, nil, []string{"tapp/web", "5"}},
		{"error-kill-one-of-several-out-of-range", false, nil, []string{"tapp/web", "1", "9"}},
		{"error-kill-negative", false, nil, []string{"tapp/web", "--", "-1"}},
		{"error-kill-not-a-number", false, nil, []string{"tapp/web", "three"}},
		{"error-kill-leading-zero", false, nil, []string{"tapp/web", "03"}},
		{"error-kill-no-instances", false, nil, []string{"tapp/empty", "0"}},
		{"error-kill-default-replicas-out-of-range", false, nil, []string{"tapp/one", "1"}},
		{"error-kill-no-ids", false, nil, []string{"tapp/web"}},
		{"error-start-out-of-range", true, killed, []string{"tapp/web", "7"}},
		{"error-canary", false, nil, []string{"canary/checkout", "1"}},
		{"error-missing", false, nil, []string{"tapp/nope", "1"}},
		{"error-start-missing", true, nil, []string{"tapp/nope", "1"}},
		{"error-no-args", false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newCmd := NewCmdKillInstance
			if tt.start {
				newCmd = NewCmdStartInstance
			}
			res := cmdtest.Run(t, newCmd, objects(tt.statuses), tt.args...)
			cmdtest.Golden(t, tt.name, res.Transcript())
			// A refused command, or one with nothing to do, leaves the TApp as it was.
			if res.Code != 0 || unchanged[tt.name] {
				cmdtest.AssertUnchanged(t, res, objects(tt.statuses))
			}
		})
	}
}

func storedStatuses(t *testing.T, res cmdtest.Result) map[string]v1alpha1.InstanceDesiredStatus {
	t.Helper()
	obj := res.Stored(t, workload.TApp.Resource, "web")
	tapp, err := workload.AsTApp(obj)
	if err != nil {
		t.Fatal(err)
	}
	if *tapp.Spec.Replicas != 5 {
		t.Errorf("replicas changed to %d", *tapp.Spec.Replicas)
	}
	return tapp.Spec.Statuses
}

// The stored statuses are really changed, and only for the ids named.
func TestStoredStatuses(t *testing.T) {
	killed := map[string]v1alpha1.InstanceDesiredStatus{"2": v1alpha1.InstanceKilled, "4": v1alpha1.InstanceKilled}
	got := storedStatuses(t, cmdtest.Run(t, NewCmdKillInstance, objects(nil), "tapp/web", "3", "1"))
	if len(got) != 2 || got["1"] != v1alpha1.InstanceKilled || got["3"] != v1alpha1.InstanceKilled {
		t.Errorf("after kill 3 1 on a TApp without statuses: %v", got)
	}
	got = storedStatuses(t, cmdtest.Run(t, NewCmdKillInstance, objects(killed), "tapp/web", "3"))
	if len(got) != 3 || got["2"] != v1alpha1.InstanceKilled || got["3"] != v1alpha1.InstanceKilled || got["4"] != v1alpha1.InstanceKilled {
		t.Errorf("after kill 3 on a TApp with 2 and 4 killed: %v", got)
	}
	got = storedStatuses(t, cmdtest.Run(t, NewCmdStartInstance, objects(killed), "tapp/web", "2"))
	if len(got) != 1 || got["4"] != v1alpha1.InstanceKilled {
		t.Errorf("after start 2 on a TApp with 2 and 4 killed: %v", got)
	}
}
