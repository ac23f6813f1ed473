package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	fakekube "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

// fakeCluster is a fake dynamic client holding objs that lists every resource the hub watches.
func fakeCluster(objs ...runtime.Object) *fakedynamic.FakeDynamicClient {
	kinds := map[schema.GroupVersionResource]string{eventsResource: "EventList", podsResource: "PodList", rsResource: "ReplicaSetList"}
	for _, k := range workload.Kinds {
		kinds[k.Resource] = k.Name + "List"
	}
	return fakedynamic.NewSimpleDynamicClientWithCustomListKinds(cmdtest.Scheme(), kinds, objs...)
}

// startedHub is a hub whose informers have listed objs from a fake cluster.
func startedHub(t *testing.T, objs ...runtime.Object) (*Hub, *fakedynamic.FakeDynamicClient) {
	t.Helper()
	client := fakeCluster(objs...)
	h := NewHub(client, cmdtest.Namespace)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.Start(ctx)
	for gvr, inf := range h.informers {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatalf("%s never synced", gvr.Resource)
		}
	}
	return h, client
}

func deployment(name string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cmdtest.Namespace, Generation: 1}}
	d.Spec.Replicas = ptr.To[int32](1)
	d.Status.ObservedGeneration = 1
	return d
}

// The list shows our workloads and the Deployments a Canary releases, each with its phase;
// a Deployment no Canary releases is not listed.
func TestBuildList(t *testing.T) {
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "game", Namespace: cmdtest.Namespace}}
	h, _ := startedHub(t, pausedCanary(), tapp, deployment("checkout"), deployment("checkout-canary"), deployment("other"))
	page := BuildList(h, "namespace test", false)
	var got []string
	for _, r := range page.Rows {
		got = append(got, r.Kind+"/"+r.Name+" "+r.Phase+" "+r.ReleasedBy)
	}
	want := []string{"tapp/game Progressing ", "canary/checkout Paused ", "deploy/checkout Progressing checkout", "deploy/checkout-canary Progressing checkout"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The release page of a Canary: its timeline, its checks with history and thresholds, its
// Events, and its buttons (undo disabled with the reason, on a Canary of two Deployments).
func TestBuildRelease(t *testing.T) {
	c := pausedCanary()
	end := metav1.NewTime(time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC))
	c.Status.Batches[0].PauseEndTime = &end
	c.Spec.Analysis = []v1alpha1.AnalysisCheck{{Name: "errors", SuccessCondition: "result < 0.01"},
		{Name: "pods", Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{MaxNotReady: 1}}}}
	c.Status.Analysis = []v1alpha1.AnalysisCheckStatus{{Name: "pods", Phase: "Running", Measurements: []v1alpha1.AnalysisMeasurement{
		{Phase: "Successful", Value: "{notReady:0,pods:2}", MeasuredAt: end}}}}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: cmdtest.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Canary", Name: "checkout"}, Reason: "BatchPaused", Message: "waiting", Type: "Normal"}
	other := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2", Namespace: cmdtest.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "unrelated"}, Reason: "Other"}
	c.Spec.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1), Weight: ptr.To[int32](10), Pause: &v1alpha1.CanaryPause{}}}
	c.Spec.Batches = nil
	c.Status.TrafficRouting = &v1alpha1.CanaryTrafficStatus{DesiredWeight: 10, ActualWeight: 5}
	objs := []runtime.Object{c, deployment("checkout"), deployment("checkout-canary"), ev, other}
	h, _ := startedHub(t, objs...)
	r := Reader{Dyn: cmdtest.NewDynamicClient(c, deployment("checkout"), deployment("checkout-canary")),
		Kube: fakekube.NewSimpleClientset(deployment("checkout"), deployment("checkout-canary"))}
	p := BuildRelease(context.Background(), h, r, workload.Canary, cmdtest.Namespace, "checkout", false)
	if p.Phase != "Paused" || len(p.Steps) != 2 || p.Steps[0].Where != "current" || p.Steps[0].Pause != "until promoted" ||
		p.Steps[0].PauseEndTime == nil || p.Steps[0].Weight == nil || *p.Steps[0].Weight != 10 || p.Steps[1].Where != "next" {
		t.Errorf("phase %s, steps %+v", p.Phase, p.Steps)
	}
	if p.Traffic == nil || p.Traffic.Desired != 10 || p.Traffic.Actual != 5 {
		t.Errorf("traffic %+v, want desired 10, actual 5", p.Traffic)
	}
	if len(p.Checks) != 2 || len(p.Checks[0].Thresholds) != 1 || p.Checks[0].Thresholds[0].Value != 0.01 ||
		len(p.Checks[1].Points) != 1 || p.Checks[1].Points[0].Number == nil || *p.Checks[1].Points[0].Number != 0 ||
		p.Checks[1].Thresholds[0].Op != "<=" || p.Checks[1].Phase != "Running" {
		t.Errorf("checks %+v", p.Checks)
	}
	if len(p.Events) != 1 || p.Events[0].Reason != "BatchPaused" || p.Events[0].Object != "canary/checkout" {
		t.Errorf("events %+v, want the Canary's only", p.Events)
	}
	var labels []string
	for _, b := range p.Actions {
		labels = append(labels, b.Label)
		if b.Action == Undo && (b.Enabled || !strings.Contains(b.Why, "keeps no revisions")) {
			t.Errorf("undo button %+v, want disabled with its reason", b)
		}
		if b.Action == Promote && (!b.Enabled || b.Target != "canary/checkout") {
			t.Errorf("promote button %+v", b)
		}
	}
	if got := strings.Join(labels, ","); got != "promote,promote --full,pause,resume,abort,retry,undo" {
		t.Errorf("buttons %s", got)
	}
	ro := BuildRelease(context.Background(), h, r, workload.Canary, cmdtest.Namespace, "checkout", true)
	for _, b := range ro.Actions {
		if b.Enabled {
			t.Errorf("read-only: %s enabled", b.Label)
		}
	}
	missing := BuildRelease(context.Background(), h, r, workload.Canary, cmdtest.Namespace, "nope", false)
	if missing.Phase != "NotFound" || len(missing.Actions) != 0 {
		t.Errorf("missing canary: %+v", missing)
	}
}

// A tab's event stream sends the page at once, then again when the watch sees a change: here a
// TApp created after the tab opened.
func TestStreamFollowsTheWatch(t *testing.T) {
	h, client := startedHub(t, pausedCanary())
	srv := httptest.NewServer(New(Config{Token: token, Namespace: cmdtest.Namespace}, h).Handler())
	defer srv.Close()
	// The client's timeout ends a stream that never sends the second page: the test fails then.
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(srv.URL + "/" + token + "/api/stream?view=list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := bufio.NewScanner(resp.Body)
	events.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() ListPage {
		t.Helper()
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				var page ListPage
				if err := json.Unmarshal([]byte(data), &page); err != nil {
					t.Fatal(err)
				}
				return page
			}
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return ListPage{}
	}
	if first := next(); len(first.Rows) != 1 || first.Rows[0].Name != "checkout" {
		t.Fatalf("first page %+v, want the Canary", first.Rows)
	}
	tapp := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps.workload.dev/v1alpha1", "kind": "TApp",
		"metadata": map[string]interface{}{"name": "game", "namespace": cmdtest.Namespace}}}
	if _, err := client.Resource(workload.TApp.Resource).Namespace(cmdtest.Namespace).Create(context.Background(), tapp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if second := next(); len(second.Rows) != 2 || second.Rows[0].Name != "game" {
		t.Fatalf("after the TApp's creation %+v, want it listed", second.Rows)
	}
}

// A watch the API server refuses (RBAC) is shown on every page with the server's message, and
// the other resources are still listed.
func TestWatchErrorsShown(t *testing.T) {
	client := fakeCluster(pausedCanary())
	client.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(podsResource.GroupResource(), "", errors.New(`User "viewer" cannot list resource "pods"`))
	})
	h := NewHub(client, cmdtest.Namespace)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.Start(ctx)
	var page ListPage
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		page = BuildList(h, "namespace test", false)
		return len(page.Errors) > 0 && len(page.Rows) > 0, nil
	})
	if err != nil || len(page.Errors) != 1 || !strings.Contains(page.Errors[0], `watching pods: `) ||
		!strings.Contains(page.Errors[0], `cannot list resource "pods"`) || page.Rows[0].Name != "checkout" {
		t.Errorf("errors %q, rows %+v (%v); want the pods' refusal beside the Canary", page.Errors, page.Rows, err)
	}
}

// The page of a Deployment a Canary releases: its pods by ReplicaSet, and the buttons of the
// verbs a Deployment has (pause, resume, undo), acting on it.
func TestBuildReleaseOfADeployment(t *testing.T) {
	d := deployment("checkout")
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "checkout"}}
	h, _ := startedHub(t, pausedCanary(), d)
	r := Reader{Dyn: cmdtest.NewDynamicClient(d), Kube: fakekube.NewSimpleClientset(d)}
	p := BuildRelease(context.Background(), h, r, workload.Deployment, cmdtest.Namespace, "checkout", false)
	var got []string
	for _, b := range p.Actions {
		got = append(got, b.Label+" "+b.Target)
	}
	if want := "pause deploy/checkout,resume deploy/checkout,undo deploy/checkout"; strings.Join(got, ",") != want {
		t.Errorf("buttons %q, want %s", got, want)
	}
	if len(p.Steps) != 0 || p.Traffic != nil || len(p.Checks) != 0 || len(p.Errors) != 0 {
		t.Errorf("a Deployment's page: steps %v, traffic %v, checks %v, errors %q", p.Steps, p.Traffic, p.Checks, p.Errors)
	}
}
