package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	cpv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	cpfake "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned/fake"
	cpinformers "sigs.k8s.io/cluster-inventory-api/client/informers/externalversions"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/kubectl-workload/kubectl-workload/pkg/agent/fence"
)

const token = "s3cr3t-t0ken"

// TestMemberErrorCarriesNoToken builds a member with the real clients: an exec credential
// plugin prints a bearer token, and the member's API server echoes the Authorization header
// it got in its error. The error as the controller writes it (Redact) and the member's
// reachability message carry no token, though the raw error does.
func TestMemberErrorCarriesNoToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"message":"refused request with Authorization: %s"}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	plugin := filepath.Join(t.TempDir(), "member-token")
	script := "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"" + token + "\"}}'\n"
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	m := memberOf(t, srv.URL, Options{Access: access.New([]access.Provider{{Name: "test", ExecConfig: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: plugin}}})})
	_, err := m.Kube.AppsV1().StatefulSets("shop").Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), token) {
		t.Fatalf("the member's echo did not come back (%v): the test would prove nothing", err)
	}
	if msg := Redact(err.Error()); strings.Contains(msg, token) {
		t.Fatalf("redacted error carries the token: %q", msg)
	}
	ok, msg := m.Reachable()
	if ok || strings.Contains(msg, token) || !strings.Contains(msg, "500") {
		t.Fatalf("Reachable() = %v, %q", ok, msg)
	}
}

// TestMemberWritesFenced: with the agent's write fence closed (a frozen ex-leader), a write to
// a member is refused locally and never reaches it; reads pass.
func TestMemberWritesFenced(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"StatefulSetList","apiVersion":"apps/v1","metadata":{"resourceVersion":"1"},"items":[]}`)
	}))
	defer srv.Close()
	ctx := t.Context()
	closed := fence.New(nil)
	m := memberOf(t, srv.URL, Options{
		Access: access.New([]access.Provider{{Name: "test", ExecConfig: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/true"}}}),
		Fence:  closed.Transport,
		NewClients: func(cfg *rest.Config) (Clients, error) {
			cfg.ExecProvider = nil // no credentials needed by this member
			return newClients(cfg)
		}})
	_, err := m.Kube.AppsV1().StatefulSets("shop").Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	if !errors.Is(err, fence.ErrClosed) {
		t.Fatalf("write with the fence closed: %v, want fence.ErrClosed", err)
	}
	if _, err := m.Kube.AppsV1().StatefulSets("shop").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("read with the fence closed: %v", err)
	}
	if n := posts.Load(); n != 0 {
		t.Fatalf("the member received %d writes", n)
	}
	if ok, msg := m.Reachable(); !ok {
		t.Fatalf("a fenced write made the member unreachable: %s", msg)
	}
}

// TestHealthChangeNotifies: a member that stops answering, and answers again, is reported to
// the OnProfile handlers each time (its UnitedDeployments' statuses say so), not on every
// request.
func TestHealthChangeNotifies(t *testing.T) {
	var changes atomic.Int32
	h := &health{changed: func() { changes.Add(1) }}
	fail := true
	rt := h.wrap(roundTripper(func(*http.Request) (*http.Response, error) {
		if fail {
			return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
		}
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))
	req, _ := http.NewRequest(http.MethodGet, "http://member/api", nil)
	for range 3 {
		_, _ = rt.RoundTrip(req)
	}
	if ok, msg := h.get(); ok || !strings.Contains(msg, "connection refused") || changes.Load() != 1 {
		t.Fatalf("after failures: %v %q, %d changes", ok, msg, changes.Load())
	}
	fail = false
	for range 3 {
		_, _ = rt.RoundTrip(req)
	}
	if ok, _ := h.get(); !ok || changes.Load() != 2 {
		t.Fatalf("after answers: %v, %d changes", ok, changes.Load())
	}
}

// TestRedactErrorKeepsStatus: a member's refusal stays an API status (a conflict is still a
// conflict) with its messages redacted; any other error keeps only its redacted message.
func TestRedactErrorKeepsStatus(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "web", errors.New("modified, Bearer s3cr3t"))
	conflict.ErrStatus.Details.Causes = []metav1.StatusCause{{Message: "password=s3cr3t"}}
	got := RedactError(fmt.Errorf("wrapped: %w", conflict))
	if !apierrors.IsConflict(got) {
		t.Fatalf("%v: want a conflict", got)
	}
	var st apierrors.APIStatus
	errors.As(got, &st)
	if s := fmt.Sprint(got, st.Status().Details); strings.Contains(s, "s3cr3t") || !strings.Contains(s, "wrapped: ") {
		t.Fatalf("redacted %q", s)
	}
	plain := RedactError(errors.New("dial: token=s3cr3t"))
	if errors.As(plain, &st) || strings.Contains(plain.Error(), "s3cr3t") {
		t.Fatalf("plain error %v", plain)
	}
}

// memberOf starts a registry over one ClusterProfile (fleet/member-1) whose access provider
// "test" points at server, with opts (Profiles is set here), and returns that member.
func memberOf(t *testing.T, server string, opts Options) *Member {
	t.Helper()
	cps := cpfake.NewSimpleClientset(&cpv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "member-1"},
		Status:     cpv1alpha1.ClusterProfileStatus{AccessProviders: []cpv1alpha1.AccessProvider{{Name: "test", Cluster: clientcmdv1.Cluster{Server: server}}}},
	})
	factory := cpinformers.NewSharedInformerFactory(cps, 0)
	inf := factory.Apis().V1alpha1().ClusterProfiles()
	opts.Profiles = inf.Lister()
	reg, err := New(opts, inf.Informer())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	reg.Start(ctx)
	m, err := reg.Member(ref1)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
