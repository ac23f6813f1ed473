package notifications

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/clientset/versioned/fake"
	"github.com/kubectl-workload/kubectl-workload/pkg/generated/informers/externalversions"
	"github.com/kubectl-workload/kubectl-workload/pkg/metrics"
	"github.com/kubectl-workload/kubectl-workload/pkg/notify"
)

const (
	ns       = "shop"
	agentNS  = "workload-system"
	canaryNm = "web"
)

var (
	canariesGVR = v1alpha1.SchemeGroupVersion.WithResource("canaries")
	t0          = metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
)

// hook is a receiver that fails its first fails requests with 500 and counts what it got by
// the notification id header.
type hook struct {
	mu    sync.Mutex
	fails int
	got   []string // "<trigger> <id>"
	srv   *httptest.Server
}

func newHook(t *testing.T, fails int) *hook {
	h := &hook{fails: fails}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Trigger string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.fails > 0 {
			h.fails--
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		h.got = append(h.got, body.Trigger+" "+r.Header.Get(notify.HeaderID))
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

// fakeFence is a write fence that tests open and close.
type fakeFence struct{ closed bool }

func (f *fakeFence) Check() error {
	if f.closed {
		return errors.New("fenced")
	}
	return nil
}
func (f *fakeFence) Transport(rt http.RoundTripper) http.RoundTripper { return rt }

type fixture struct {
	t        *testing.T
	kube     *k8sfake.Clientset
	client   *fake.Clientset
	ctrl     *Controller
	store    cache.Indexer
	fence    *fakeFence
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
	actions  []string
}

// pausedCanary waits for promotion at step 1 of 3; subscribe holds its annotations.
func pausedCanary(annotations map[string]string) *v1alpha1.Canary {
	cn := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: canaryNm, Namespace: ns, UID: "uid-1", Annotations: annotations}}
	cn.Spec.Canary.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx:1.27"}}
	cn.Status.Phase, cn.Status.CurrentBatch = v1alpha1.CanaryPaused, 1
	cn.Status.Batches = []v1alpha1.CanaryBatchStatus{{Index: 1, State: v1alpha1.BatchPaused, StartTime: &t0},
		{Index: 2, State: v1alpha1.BatchPending}, {Index: 3, State: v1alpha1.BatchPending}}
	cn.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonWaitingForPromotion, LastTransitionTime: t0}}
	return cn
}

func newFixture(t *testing.T, cn *v1alpha1.Canary, h *hook, nsAnnotations map[string]string) *fixture {
	t.Helper()
	kube := k8sfake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: nsAnnotations}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: notify.ConfigMapName, Namespace: agentNS},
			Data: map[string]string{"service.webhook.hook": "url: $hook-url"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: notify.SecretName, Namespace: agentNS},
			Data: map[string][]byte{"hook-url": []byte(h.srv.URL + "/secret-path")}},
	)
	f := &fixture{t: t, kube: kube, client: fake.NewSimpleClientset(cn), fence: &fakeFence{}, recorder: record.NewFakeRecorder(100)}
	f.client.PrependReactor("patch", "canaries", f.patchCanary)
	rec := func(a k8stesting.Action) (bool, runtime.Object, error) {
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		name := ""
		switch a := a.(type) {
		case k8stesting.PatchAction:
			name = a.GetName() + " " + string(a.GetPatchType())
		case k8stesting.GetAction:
			name = a.GetName()
		}
		f.actions = append(f.actions, a.GetVerb()+" "+res+" "+name)
		return false, nil, nil
	}
	f.kube.PrependReactor("*", "*", rec)
	f.client.PrependReactor("*", "*", rec)
	informers := externalversions.NewSharedInformerFactory(f.client, 0)
	c, err := NewController(f.kube, f.client, informers.Apps().V1alpha1().Canaries(), f.recorder, agentNS, f.fence)
	if err != nil {
		t.Fatal(err)
	}
	f.clock = testingclock.NewFakeClock(t0.Time)
	c.clock = f.clock
	f.ctrl, f.store = c, informers.Apps().V1alpha1().Canaries().Informer().GetIndexer()
	f.refresh()
	return f
}

// patchCanary stores merge patches, and a server-side apply of the status as a condition set.
func (f *fixture) patchCanary(a k8stesting.Action) (bool, runtime.Object, error) {
	pa := a.(k8stesting.PatchActionImpl)
	if pa.GetPatchType() != types.ApplyPatchType {
		return false, nil, nil
	}
	obj, err := f.client.Tracker().Get(canariesGVR, ns, pa.GetName())
	if err != nil {
		return true, nil, err
	}
	cn := obj.(*v1alpha1.Canary).DeepCopy()
	var applied v1alpha1.Canary
	if err := json.Unmarshal(pa.GetPatch(), &applied); err != nil {
		return true, nil, err
	}
	for _, c := range applied.Status.Conditions {
		meta.SetStatusCondition(&cn.Status.Conditions, c)
	}
	return true, cn, f.client.Tracker().Update(canariesGVR, cn, ns)
}

// refresh makes the lister show what the fake API server holds.
func (f *fixture) refresh() {
	f.t.Helper()
	obj, err := f.client.Tracker().Get(canariesGVR, ns, canaryNm)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.Replace([]any{obj.(*v1alpha1.Canary).DeepCopy()}, ""); err != nil {
		f.t.Fatal(err)
	}
}

// sync refreshes the lister, syncs, and checks the API actions made.
func (f *fixture) sync(want ...string) {
	f.t.Helper()
	f.refresh()
	f.actions = nil
	if err := f.ctrl.sync(context.Background(), cache.ObjectName{Namespace: ns, Name: canaryNm}); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	if !slices.Equal(f.actions, want) {
		f.t.Fatalf("actions:\n  got  %s\n  want %s", strings.Join(f.actions, "\n       "), strings.Join(want, "\n       "))
	}
}

func (f *fixture) stored() *v1alpha1.Canary {
	obj, err := f.client.Tracker().Get(canariesGVR, ns, canaryNm)
	if err != nil {
		f.t.Fatal(err)
	}
	return obj.(*v1alpha1.Canary)
}

const (
	getNamespace = "get namespaces " + ns
	getConfig    = "get configmaps " + notify.ConfigMapName
	getSecret    = "get secrets " + notify.SecretName
	recordSent   = "patch canaries " + canaryNm + " " + string(types.MergePatchType)
	applyStatus  = "patch canaries/status " + canaryNm + " " + string(types.ApplyPatchType)
)

// Each fired trigger is delivered once to each subscriber (the Canary's and its namespace's),
// recorded on the Canary after each delivery; resyncs send nothing again and read the
// namespace once more only.
func TestDeliversOnceAndRecords(t *testing.T) {
	h := newHook(t, 0)
	cn := pausedCanary(map[string]string{notify.SubscribePrefix + "on-paused.hook": ""})
	f := newFixture(t, cn, h, map[string]string{notify.SubscribePrefix + "on-step-started.hook": ""})
	f.sync(getNamespace, getConfig, getSecret, recordSent, recordSent)
	got := h.received()
	if len(got) != 2 || !strings.HasPrefix(got[0], "on-step-started ") || !strings.HasPrefix(got[1], "on-paused ") {
		t.Fatalf("received %v", got)
	}
	sent, err := notify.ParseSent(f.stored().Annotations[notify.AnnotationSent])
	if err != nil || !sent.Has(notify.OnPaused, "step 1 at 2026-11-26T10:00:00Z", notify.Destination{Service: "hook"}) ||
		!sent.Has(notify.OnStepStarted, "step 1 at 2026-11-26T10:00:00Z", notify.Destination{Service: "hook"}) {
		t.Errorf("record %v, %v", sent, err)
	}
	f.sync(getNamespace)
	f.sync()
	if len(h.received()) != 2 {
		t.Errorf("received again: %v", h.received())
	}
	if ev := drain(f.recorder); len(ev) != 2 || !strings.HasPrefix(ev[0], "Normal NotificationSent on-step-started sent to hook") {
		t.Errorf("events %v", ev)
	}
}

// A new leader reads the record and sends nothing already sent; a new event (the next step)
// is sent.
func TestNewLeaderDoesNotResend(t *testing.T) {
	h := newHook(t, 0)
	cn := pausedCanary(map[string]string{notify.SubscribePrefix + "on-paused.hook": "", notify.SubscribePrefix + "on-step-started.hook": ""})
	f := newFixture(t, cn, h, nil)
	f.sync(getNamespace, getConfig, getSecret, recordSent, recordSent)

	leader := newFixture(t, f.stored().DeepCopy(), h, nil)
	leader.sync(getNamespace)
	if len(h.received()) != 2 {
		t.Fatalf("the new leader sent again: %v", h.received())
	}
	next := leader.stored().DeepCopy()
	t1 := metav1.NewTime(t0.Add(time.Minute))
	next.Status.Phase, next.Status.CurrentBatch = v1alpha1.CanaryProgressing, 2
	next.Status.Batches[0].State = v1alpha1.BatchCompleted
	next.Status.Batches[1].State, next.Status.Batches[1].StartTime = v1alpha1.BatchUpgrading, &t1
	next.Status.Conditions[0].Status, next.Status.Conditions[0].Reason = metav1.ConditionTrue, v1alpha1.ReasonBatchUpgrading
	if err := leader.client.Tracker().Update(canariesGVR, next, ns); err != nil {
		t.Fatal(err)
	}
	leader.sync(getNamespace, getConfig, getSecret, recordSent)
	if got := h.received(); len(got) != 3 || !strings.HasPrefix(got[2], "on-step-started ") || got[2] == got[0] {
		t.Errorf("received %v", got)
	}
}

// A receiver that fails three times: each attempt is an Event and a retry after the backoff;
// the condition turns False at the first failure and True once delivered; one delivery.
func TestFailingReceiverRetriesWithBackoff(t *testing.T) {
	h := newHook(t, 3)
	failedBefore, sentBefore := attempts(t, "failed"), attempts(t, "sent")
	f := newFixture(t, pausedCanary(map[string]string{notify.SubscribePrefix + "on-paused.hook": ""}), h, nil)
	f.sync(getNamespace, getConfig, getSecret, applyStatus)
	c := meta.FindStatusCondition(f.stored().Status.Conditions, notify.ConditionDelivered)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != notify.ReasonDeliveryFailed ||
		c.Message != "on-paused to hook: the receiver answered 500 Internal Server Error; retrying with backoff" {
		t.Fatalf("condition %+v", c)
	}
	// Before the backoff has passed a sync (the Canary changed) sends nothing.
	f.sync(getNamespace)
	for _, wait := range []time.Duration{time.Second, 2 * time.Second} {
		f.clock.Step(wait)
		f.sync(getNamespace, getConfig, getSecret)
	}
	f.sync(getNamespace)
	f.clock.Step(4 * time.Second)
	f.sync(getNamespace, getConfig, getSecret, recordSent, applyStatus)
	if got := h.received(); len(got) != 1 {
		t.Errorf("received %v", got)
	}
	if c := meta.FindStatusCondition(f.stored().Status.Conditions, notify.ConditionDelivered); c == nil || c.Status != metav1.ConditionTrue || c.Reason != notify.ReasonDelivered {
		t.Errorf("condition after delivery %+v", c)
	}
	ev := drain(f.recorder)
	want := []string{"attempt 1 failed, retrying in 1s", "attempt 2 failed, retrying in 2s", "attempt 3 failed, retrying in 4s", "on-paused sent to hook"}
	for i, w := range want {
		if i >= len(ev) || !strings.Contains(ev[i], w) {
			t.Fatalf("events %v, want %v", ev, want)
		}
		if strings.Contains(ev[i], "secret-path") || strings.Contains(ev[i], "127.0.0.1") {
			t.Errorf("an Event shows the secret URL: %s", ev[i])
		}
	}
	f.sync(getNamespace)
	f.sync()
	if failed, sent := attempts(t, "failed")-failedBefore, attempts(t, "sent")-sentBefore; failed != 3 || sent != 1 {
		t.Errorf("workload_agent_notifications_total: %v failed, %v sent; want 3 and 1", failed, sent)
	}
}

// attempts reads workload_agent_notifications_total{trigger="on-paused",service="hook",result}.
func attempts(t *testing.T, result string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "workload_agent_notifications_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["trigger"] == notify.OnPaused && labels["service"] == "hook" && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A frozen ex-leader sends nothing: the fence is checked before each send.
func TestFencedAgentSendsNothing(t *testing.T) {
	h := newHook(t, 0)
	f := newFixture(t, pausedCanary(map[string]string{notify.SubscribePrefix + "on-paused.hook": ""}), h, nil)
	f.fence.closed = true
	f.refresh()
	err := f.ctrl.sync(context.Background(), cache.ObjectName{Namespace: ns, Name: canaryNm})
	if !errors.Is(err, errFenced) || len(h.received()) != 0 {
		t.Errorf("sync: %v; received %v", err, h.received())
	}
	if _, ok := f.stored().Annotations[notify.AnnotationSent]; ok {
		t.Error("recorded a notification not sent")
	}
}

// A trigger nobody subscribes costs one read of the namespace per event, and nothing else.
func TestUnsubscribedCanary(t *testing.T) {
	h := newHook(t, 0)
	f := newFixture(t, pausedCanary(nil), h, nil)
	f.sync(getNamespace)
	f.sync()
	if len(h.received()) != 0 {
		t.Errorf("received %v", h.received())
	}
}

func TestBackoff(t *testing.T) {
	got := []time.Duration{backoff(1), backoff(2), backoff(3), backoff(20)}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, retryMax}; !slices.Equal(got, want) {
		t.Errorf("backoff %v, want %v", got, want)
	}
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A notification that fails until its event is over (the pause promoted) is not sent late, and
// the condition stops saying it fails.
func TestFailingNotificationOfAnEventOver(t *testing.T) {
	h := newHook(t, 100)
	f := newFixture(t, pausedCanary(map[string]string{notify.SubscribePrefix + "on-paused.hook": ""}), h, nil)
	f.sync(getNamespace, getConfig, getSecret, applyStatus)
	promoted := f.stored().DeepCopy()
	promoted.Status.Phase = v1alpha1.CanaryProgressing
	promoted.Status.Conditions[0].Status, promoted.Status.Conditions[0].Reason = metav1.ConditionTrue, v1alpha1.ReasonBatchUpgrading
	if err := f.client.Tracker().Update(canariesGVR, promoted, ns); err != nil {
		t.Fatal(err)
	}
	f.sync(applyStatus) // on-paused no longer fires; on-step-started of step 1 was handled (nobody subscribes)
	if c := meta.FindStatusCondition(f.stored().Status.Conditions, notify.ConditionDelivered); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("condition %+v", c)
	}
	if len(h.received()) != 0 {
		t.Errorf("received %v", h.received())
	}
}
