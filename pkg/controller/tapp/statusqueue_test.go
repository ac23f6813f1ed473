package tapp

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
)

// syncStatus runs one sync of the status queue and returns the API actions it made, described.
func (f *fixture) syncStatus(name string) []string {
	f.t.Helper()
	f.clearActions()
	if err := f.c.syncStatus(context.Background(), cache.NewObjectName(ns, name)); err != nil {
		f.t.Fatalf("status sync %s: %v", name, err)
	}
	return f.actions()
}

func TestStatusQueueWritesWhatTheSyncWould(t *testing.T) {
	tp := newTApp("web", 2)
	pods := runningPods(tp, 0, 1)
	setReady(pods[1], false)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, nil)
	sameActions(t, f.syncStatus("web"), "update tapps/status web")
	got := f.statusWritten().Status
	if f.c.Queue.Len() != 0 {
		t.Errorf("main queue length %d, want 0: nothing but the status to write", f.c.Queue.Len())
	}
	if got.ReadyReplicas != 1 || got.Replicas != 2 {
		t.Errorf("status written: ready %d, replicas %d, want 1 of 2", got.ReadyReplicas, got.Replicas)
	}
	other := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, nil)
	sameActions(t, other.sync("web"), "update tapps/status web")
	if want := other.statusWritten().Status; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("status queue wrote\n%+v\nthe sync writes\n%+v", got, want)
	}
	// Written once: the same observation writes nothing more.
	sameActions(t, f.syncStatus("web"))
}

func TestStatusQueueHandsOtherWritesToTheMainQueue(t *testing.T) {
	one := func(tp *appsv1alpha1.TApp) []*appsv1alpha1.TApp { return []*appsv1alpha1.TApp{tp} }
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *fixture
	}{
		{"a pod to create", func(t *testing.T) *fixture {
			tp := newTApp("web", 2)
			return newFixture(t, one(tp), runningPods(tp, 0), nil)
		}},
		{"a pod to delete", func(t *testing.T) *fixture {
			tp := newTApp("web", 1)
			return newFixture(t, one(tp), runningPods(tp, 0, 1), nil)
		}},
		{"a readiness gate to open", func(t *testing.T) *fixture {
			tp := newTApp("web", 1)
			p := runningPod(tp, 0)
			p.Status.Conditions[0].Status = "False"
			return newFixture(t, one(tp), []*corev1.Pod{p}, nil)
		}},
		{"a revision to record", func(t *testing.T) *fixture {
			tp := newTApp("web", 1)
			return newFixtureWithHistory(t, one(tp), runningPods(tp, 0), nil)
		}},
		{"templates to prune", func(t *testing.T) *fixture {
			tp := newTApp("web", 1)
			tp.Spec.AutoDeleteUnusedTemplate = true
			return newFixture(t, one(tp), runningPods(tp, 0), nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.setup(t)
			sameActions(t, f.syncStatus("web"))
			if f.c.Queue.Len() != 1 {
				t.Errorf("main queue length %d, want the TApp handed over", f.c.Queue.Len())
			}
		})
	}
}

func TestStatusWritesGoThroughTheStatusClient(t *testing.T) {
	tp := newTApp("web", 1)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil)
	status := fake.NewSimpleClientset(f.getTApp("web"))
	var statusLog []string
	status.PrependReactor("*", "*", func(a core.Action) (bool, runtime.Object, error) {
		statusLog = append(statusLog, describe(a))
		return false, nil, nil
	})
	f.c.statusClient = status
	// The pod writes go through the main client, the status through the status client.
	sameActions(t, f.sync("web"), "create pods web-0", "patch pods/status web-0")
	sameActions(t, statusLog, "update tapps/status web")
}

func TestOneSyncOfAKeyAtATime(t *testing.T) {
	x := newExclusive()
	again := 0
	if !x.begin("a", func() { again++ }) {
		t.Fatal("a free key was refused")
	}
	if !x.begin("b", func() { again++ }) {
		t.Fatal("another key was refused")
	}
	if x.begin("a", func() { again++ }) || x.begin("a", func() { again++ }) {
		t.Fatal("a key taken twice")
	}
	x.end("a")
	if again != 2 {
		t.Errorf("%d syncs queued again when the running one ended, want 2", again)
	}
	if !x.begin("a", func() { again++ }) {
		t.Error("a released key was refused")
	}

	// A status sync of a TApp the main queue is syncing leaves it for later, on its own queue.
	tp := newTApp("web", 1)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)
	if !f.c.running.begin(ns+"/web", func() {}) {
		t.Fatal("key refused")
	}
	sameActions(t, f.syncStatus("web"))
	if f.c.status.Queue.Len() != 0 {
		t.Fatal("queued again before the running sync ended")
	}
	f.c.running.end(ns + "/web")
	if f.c.status.Queue.Len() != 1 {
		t.Errorf("status queue length %d after the running sync ended, want 1", f.c.status.Queue.Len())
	}
}
