package dashboard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd/cmdtest"
)

const token = "s3cret-token"

// pausedCanary is a release of 10 replicas in 4 batches, paused at batch 1 for a promote.
func pausedCanary() *v1alpha1.Canary {
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: cmdtest.Namespace, Generation: 3}}
	c.Spec.Replicas = 10
	c.Spec.Batches = ptr.To[int32](4)
	c.Spec.PauseType = v1alpha1.PauseAll
	c.Spec.StableRef.Name = "checkout"
	c.Spec.Canary.Name = "checkout-canary"
	c.Status.ObservedGeneration = 3
	c.Status.Phase = v1alpha1.CanaryPaused
	c.Status.CurrentBatch = 1
	for i, size := range []int32{1, 4, 7, 10} {
		state := v1alpha1.BatchPending
		if i == 0 {
			state = v1alpha1.BatchPaused
		}
		c.Status.Batches = append(c.Status.Batches, v1alpha1.CanaryBatchStatus{Index: int32(i + 1), CanaryReplicas: size, State: state})
	}
	return c
}

// fixture is a dashboard server over a fake cluster whose API actions are recorded.
type fixture struct {
	handler http.Handler
	log     *cmdtest.Recorder
}

func newFixture(readOnly bool, objs ...runtime.Object) *fixture {
	client := cmdtest.NewDynamicClient(objs...)
	log := &cmdtest.Recorder{}
	client.PrependReactor("*", "*", log.Record)
	hub := NewHub(client, cmdtest.Namespace) // not started: these tests look at actions only
	srv := New(Config{Token: token, ReadOnly: readOnly, Namespace: cmdtest.Namespace, Reader: Reader{Dyn: client}}, hub)
	return &fixture{handler: srv.Handler(), log: log}
}

func (f *fixture) do(method, path, header, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if header != "" {
		req.Header.Set(TokenHeader, header)
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return rec
}

func actionBody(action Action) string {
	data, _ := json.Marshal(ActionRequest{Action: action, Kind: "canary", Namespace: cmdtest.Namespace, Name: "checkout"})
	return string(data)
}

// Any request whose path does not carry the token gets 401 and sends nothing to the API server,
// whatever it carries elsewhere (the header, a longer or shorter token).
func TestTokenRequired(t *testing.T) {
	for _, tc := range []struct{ method, path, header string }{
		{"GET", "/", ""},
		{"GET", "/app.js", ""},
		{"GET", "/api/list", ""},
		{"GET", "/api/stream?view=list", ""},
		{"GET", "/" + token + "x/", ""},
		{"GET", "/" + token[:len(token)-1] + "/", ""},
		{"POST", "/api/action", token},
		{"POST", "/wrong/api/action", token},
		{"POST", "/" + strings.ToUpper(token) + "/api/action", token},
	} {
		f := newFixture(false, pausedCanary())
		rec := f.do(tc.method, tc.path, tc.header, actionBody(Promote))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s %s: status %d, want 401", tc.method, tc.path, rec.Code)
		}
		if got := f.log.Lines(); len(got) != 0 {
			t.Errorf("%s %s: API actions %q, want none", tc.method, tc.path, got)
		}
	}
	f := newFixture(false)
	if rec := f.do("GET", "/"+token+"/", "", ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "app.js") {
		t.Errorf("GET with the token: %d %q, want the page", rec.Code, rec.Body.String())
	}
	if rec := f.do("GET", "/"+token, "", ""); rec.Code != http.StatusFound {
		t.Errorf("GET /TOKEN: %d, want a redirect to /TOKEN/", rec.Code)
	}
}

// A POST must carry the token in its header too: the browser sends a cross-site form to the
// URL, but cannot add the header.
func TestPostNeedsTokenHeader(t *testing.T) {
	for _, header := range []string{"", "wrong", token + "x"} {
		f := newFixture(false, pausedCanary())
		rec := f.do("POST", "/"+token+"/api/action", header, actionBody(Promote))
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "nothing was changed") {
			t.Errorf("header %q: %d %s, want 403", header, rec.Code, rec.Body.String())
		}
		if got := f.log.Lines(); len(got) != 0 {
			t.Errorf("header %q: API actions %q, want none", header, got)
		}
	}
	f := newFixture(false, pausedCanary())
	req := httptest.NewRequest("POST", "/"+token+"/api/action", strings.NewReader("action=promote"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(TokenHeader, token)
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType || len(f.log.Lines()) != 0 {
		t.Errorf("a form post: %d, actions %q; want 415 and none", rec.Code, f.log.Lines())
	}
}

// A read-only dashboard refuses every action before reading anything; its preview reads and
// sends nothing else.
func TestReadOnly(t *testing.T) {
	for _, a := range Actions {
		f := newFixture(true, pausedCanary())
		rec := f.do("POST", "/"+token+"/api/action", token, actionBody(a))
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "read-only") {
			t.Errorf("%s: %d %s, want 403 read-only", a, rec.Code, rec.Body.String())
		}
		if got := f.log.Lines(); len(got) != 0 {
			t.Errorf("%s: API actions %q, want none", a, got)
		}
	}
	f := newFixture(true, pausedCanary())
	rec := f.do("POST", "/"+token+"/api/preview", token, actionBody(Promote))
	var res Result
	_ = json.Unmarshal(rec.Body.Bytes(), &res)
	if rec.Code != http.StatusOK || !strings.Contains(res.Line, "(dry run: would send the json patch") {
		t.Errorf("preview: %d %+v, want the dry-run line", rec.Code, res)
	}
	if got, want := f.log.Lines(), []string{"get canaries/checkout"}; !slices.Equal(got, want) {
		t.Errorf("preview: API actions %q, want %q", got, want)
	}
}

// Each button runs its verb's code: the same reads, patches and refusals as the command line.
func TestActionRouting(t *testing.T) {
	rolledBack := pausedCanary()
	rolledBack.Spec.Rollback = true
	rolledBack.Status.Phase = v1alpha1.CanaryRolledBack
	target := pausedCanary()
	target.Spec.TargetRef = &v1alpha1.CanaryTargetRef{Kind: "DaemonSet", Name: "agent"}
	for _, tc := range []struct {
		action  Action
		canary  *v1alpha1.Canary
		code    int
		line    string
		actions []string
	}{
		{Promote, pausedCanary(), 200, "canary/checkout promoted: batch 1 of 4 approved",
			[]string{`get canaries/checkout`, `patch canaries/checkout json [{"op":"test","path":"/spec/approvedBatch","value":null},{"op":"add","path":"/spec/approvedBatch","value":1}]`}},
		{PromoteFull, pausedCanary(), 200, "canary/checkout fully promoted: all 4 batches approved",
			[]string{`get canaries/checkout`, `patch canaries/checkout json [{"op":"test","path":"/spec/approvedBatch","value":null},{"op":"add","path":"/spec/approvedBatch","value":4}]`}},
		{Pause, pausedCanary(), 200, "canary/checkout paused",
			[]string{`get canaries/checkout`, `patch canaries/checkout merge {"spec":{"paused":true}}`}},
		{Resume, pausedCanary(), 200, "canary/checkout is not paused", []string{`get canaries/checkout`}},
		{Abort, pausedCanary(), 200, "canary/checkout aborted: rolling back to the stable Deployment checkout",
			[]string{`get canaries/checkout`, `patch canaries/checkout merge {"spec":{"rollback":true}}`}},
		{Retry, pausedCanary(), 409, "canary/checkout was not aborted (phase Paused)", []string{`get canaries/checkout`}},
		{Retry, rolledBack, 200, "canary/checkout retried (rolled back on request)",
			[]string{`get canaries/checkout`, `patch canaries/checkout json [{"op":"test","path":"/spec/retries","value":null},{"op":"add","path":"/spec/retries","value":1},{"op":"add","path":"/spec/rollback","value":false},{"op":"add","path":"/spec/approvedBatch","value":0}]`}},
		{Promote, rolledBack, 409, "canary/checkout is rolling back", []string{`get canaries/checkout`}},
		{Undo, pausedCanary(), 400, "a Canary of two Deployments keeps no revisions", []string{`get canaries/checkout`}},
		{Undo, target, 409, "ds/agent not found", []string{`get canaries/checkout`, `get daemonsets/agent`}},
	} {
		f := newFixture(false, tc.canary)
		rec := f.do("POST", "/"+token+"/api/action", token, actionBody(tc.action))
		var res Result
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("%s: %v: %s", tc.action, err, rec.Body.String())
		}
		if rec.Code != tc.code || !strings.Contains(res.Line+res.Error, tc.line) {
			t.Errorf("%s: %d %+v, want %d %q", tc.action, rec.Code, res, tc.code, tc.line)
		}
		if got := f.log.Lines(); !slices.Equal(got, tc.actions) {
			t.Errorf("%s: API actions\n%q\nwant\n%q", tc.action, got, tc.actions)
		}
	}
}

// Requests about another namespace than the dashboard's are refused without reading it.
func TestOtherNamespaceRefused(t *testing.T) {
	f := newFixture(false, pausedCanary())
	body := `{"action":"promote","kind":"canary","namespace":"kube-system","name":"checkout"}`
	rec := f.do("POST", "/"+token+"/api/action", token, body)
	if rec.Code != http.StatusNotFound || len(f.log.Lines()) != 0 {
		t.Errorf("%d %s, actions %q; want 404 and none", rec.Code, rec.Body.String(), f.log.Lines())
	}
}
