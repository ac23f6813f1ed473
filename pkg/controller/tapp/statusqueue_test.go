package tapp

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

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

// seen is tp as its main sync left it: its status says it acted on its generation.
func seen(tp *appsv1alpha1.TApp) *appsv1alpha1.TApp {
	tp.Status.ObservedGeneration = tp.Generation
	return tp
}

func TestStatusQueueWritesWhatTheSyncWould(t *testing.T) {
	tp := seen(newTApp("web", 2))
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

// When the main sync has pods or gates to write, the status queue still writes the status of
// what it observes (the pods as they are) and hands the TApp to the main queue; when the main
// sync has a revision to record or templates to prune, it writes nothing and hands the TApp over.
func TestStatusQueueHandsOtherWritesToTheMainQueue(t *testing.T) {
	one := func(tp *appsv1alpha1.TApp) []*appsv1alpha1.TApp { return []*appsv1alpha1.TApp{tp} }
	const writeStatus = "update tapps/status web"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *fixture
		want  []string
		ready int32 // the ready count of the status written
	}{
		{"a pod to create", func(t *testing.T) *fixture {
			tp := seen(newTApp("web", 2))
			return newFixture(t, one(tp), runningPods(tp, 0), nil)
		}, []string{writeStatus}, 1},
		{"a pod to delete", func(t *testing.T) *fixture {
			tp := seen(newTApp("web", 1))
			return newFixture(t, one(tp), runningPods(tp, 0, 1), nil)
		}, []string{writeStatus}, 2},
		{"a readiness gate to open", func(t *testing.T) *fixture {
			tp := seen(newTApp("web", 1))
			p := runningPod(tp, 0)
			p.Status.Conditions[0].Status = "False"
			return newFixture(t, one(tp), []*corev1.Pod{p}, nil)
		}, []string{writeStatus}, 1}, // the pod's Ready condition, as the kubelet reports it
		{"a revision to record", func(t *testing.T) *fixture {
			tp := seen(newTApp("web", 1))
			return newFixtureWithHistory(t, one(tp), runningPods(tp, 0), nil)
		}, nil, 0},

		{"templates to prune", func(t *testing.T) *fixture {
			tp := seen(newTApp("web", 1))
			tp.Spec.AutoDeleteUnusedTemplate = true
			return newFixture(t, one(tp), runningPods(tp, 0), nil)
		}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.setup(t)
			sameActions(t, f.syncStatus("web"), tc.want...)
			if f.c.Queue.Len() != 1 {
				t.Errorf("main queue length %d, want the TApp handed over", f.c.Queue.Len())
			}
			if len(tc.want) == 0 {
				return
			}
			st := f.statusWritten().Status
			if st.ReadyReplicas != tc.ready || st.ObservedGeneration != 1 {
				t.Errorf("status written: ready %d, observed generation %d; want ready %d, generation 1", st.ReadyReplicas, st.ObservedGeneration, tc.ready)
			}
		})
	}
}

// A TApp whose status does not say it acted on its generation is left to the main or spec
// queue, which its TApp event queued it on: the status queue writes nothing and adds nothing.
func TestStatusQueueLeavesANewGeneration(t *testing.T) {
	tp := seen(newTApp("web", 1))
	tp.Generation = 2
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)
	sameActions(t, f.syncStatus("web"))
	if f.c.Queue.Len() != 0 || f.c.Spec.Len() != 0 {
		t.Errorf("queue lengths main %d, spec %d; want 0 and 0", f.c.Queue.Len(), f.c.Spec.Len())
	}
}

// A status written while the main sync has pods to create keeps the ReplicaFailure the main
// sync reported: only the main sync can tell that the refused write went through.
func TestStatusQueueKeepsTheMainSyncsFailure(t *testing.T) {
	tp := seen(newTApp("web", 2))
	failed := metav1.Condition{Type: appsv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue,
		Reason: appsv1alpha1.ReasonFailedCreate, Message: "pods \"web-1\" is forbidden: exceeded quota", ObservedGeneration: 1}
	tp.Status.Conditions = []metav1.Condition{failed}
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, runningPods(tp, 0), nil)
	sameActions(t, f.syncStatus("web"), "update tapps/status web")
	got := meta.FindStatusCondition(f.statusWritten().Status.Conditions, appsv1alpha1.ConditionReplicaFailure)
	if got == nil || got.Reason != failed.Reason || got.Message != failed.Message {
		t.Errorf("ReplicaFailure written %+v, want the main sync's %+v", got, failed)
	}
	if f.c.Queue.Len() != 1 {
		t.Errorf("main queue length %d, want the TApp handed over", f.c.Queue.Len())
	}
}

// TApp events: an update with a new generation goes to the spec queue, one of the status only to
// the status queue, any other change and a new TApp to the main queue.
func TestTAppEventsByQueue(t *testing.T) {
	tp := seen(newTApp("web", 1))
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, nil, nil)
	h := f.c.tappEvents()
	lengths := func() [3]int { return [3]int{f.c.Queue.Len(), f.c.Spec.Len(), f.c.status.Queue.Len()} }
	drain := func() {
		for _, q := range []interface {
			Len() int
			Get() (cache.ObjectName, bool)
			Done(cache.ObjectName)
		}{f.c.Queue, f.c.Spec, f.c.status.Queue} {
			for q.Len() > 0 {
				k, _ := q.Get()
				q.Done(k)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*appsv1alpha1.TApp)
		want   [3]int // main, spec, status
	}{
		{"new generation", func(n *appsv1alpha1.TApp) { n.Generation++; n.Spec.Replicas = ptr.To[int32](2) }, [3]int{0, 1, 0}},
		{"status only", func(n *appsv1alpha1.TApp) { n.ResourceVersion = "2"; n.Status.ReadyReplicas = 1 }, [3]int{0, 0, 1}},
		{"labels", func(n *appsv1alpha1.TApp) { n.Labels = map[string]string{"team": "shop"} }, [3]int{1, 0, 0}},
		{"deleted", func(n *appsv1alpha1.TApp) { n.DeletionTimestamp = &metav1.Time{} }, [3]int{1, 0, 0}},
	} {
		n := tp.DeepCopy()
		tc.change(n)
		h.OnUpdate(tp, n)
		if got := lengths(); got != tc.want {
			t.Errorf("%s: queue lengths (main, spec, status) %v, want %v", tc.name, got, tc.want)
		}
		drain()
	}
	h.OnAdd(tp, false)
	if got := lengths(); got != [3]int{1, 0, 0} {
		t.Errorf("new TApp: queue lengths (main, spec, status) %v, want [1 0 0]", got)
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

// The status queue does not wait for a main sync of the same TApp; the main sync's status,
// computed from an observation older than the one the status queue wrote meanwhile, is not
// written over it, unless it reports a failure, after which the status queue writes the latest
// status again.
func TestStatusWritesKeepTheOrderOfTheirObservations(t *testing.T) {
	tp := seen(newTApp("web", 2))
	pods := runningPods(tp, 0, 1)
	f := newFixture(t, []*appsv1alpha1.TApp{tp}, pods, nil)
	mainSeq := f.c.order.observe() // a main sync read the caches before the pods were Ready
	older := tp.Status.DeepCopy()
	older.ReadyReplicas = 0
	sameActions(t, f.syncStatus("web"), "update tapps/status web")
	if got := f.statusWritten().Status.ReadyReplicas; got != 2 {
		t.Fatalf("status queue wrote ready %d, want 2", got)
	}
	cached := f.getTApp("web")

	f.clearActions()
	if err := f.c.writeStatusInOrder(context.Background(), cached, *older, mainSeq, false); err != nil {
		t.Fatal(err)
	}
	sameActions(t, f.actions()) // skipped: older than what was written
	if f.c.status.Queue.Len() != 0 {
		t.Errorf("status queue length %d, want 0", f.c.status.Queue.Len())
	}

	older.Conditions = []metav1.Condition{{Type: appsv1alpha1.ConditionReplicaFailure, Status: metav1.ConditionTrue,
		Reason: appsv1alpha1.ReasonFailedCreate, Message: "refused"}}
	if err := f.c.writeStatusInOrder(context.Background(), cached, *older, mainSeq, true); err != nil {
		t.Fatal(err)
	}
	sameActions(t, f.actions(), "update tapps/status web") // a failure to report
	if f.c.status.Queue.Len() != 1 {
		t.Errorf("status queue length %d, want the TApp queued to write the latest status again", f.c.status.Queue.Len())
	}
}

func TestStatusOrder(t *testing.T) {
	o := newStatusOrder()
	first, second := o.observe(), o.observe()
	var wrote []uint64
	write := func(seq uint64, must bool) (bool, bool) {
		ran, stale, err := o.write("ns/a", seq, must, func() error { wrote = append(wrote, seq); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return ran, stale
	}
	if ran, stale := write(second, false); !ran || stale {
		t.Errorf("the later observation: ran %v, stale %v; want true, false", ran, stale)
	}
	if ran, stale := write(first, false); ran || !stale {
		t.Errorf("the earlier observation after it: ran %v, stale %v; want false, true", ran, stale)
	}
	if ran, stale := write(first, true); !ran || !stale {
		t.Errorf("the earlier observation, must: ran %v, stale %v; want true, true", ran, stale)
	}
	if ran, _, _ := o.write("ns/b", first, false, func() error { return nil }); !ran {
		t.Error("another TApp's write was held back")
	}
	if len(wrote) != 2 || wrote[0] != second || wrote[1] != first {
		t.Errorf("writes %v, want [%d %d]", wrote, second, first)
	}
}
