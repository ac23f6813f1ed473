package kubeclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// The fake clientset the unit tests use satisfies Interface.
var _ Interface = fake.NewClientset()

// TestNewReachesEachGroup sends one request through each group's client and checks the path and
// the default user agent.
func TestNewReachesEachGroup(t *testing.T) {
	var mu sync.Mutex
	var paths, agents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths, agents = append(paths, r.URL.Path), append(agents, r.UserAgent())
		mu.Unlock()
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
	}))
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL, QPS: 100, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	get := metav1.GetOptions{}
	_, _ = c.CoreV1().Pods("ns").Get(ctx, "x", get)
	_, _ = c.AppsV1().Deployments("ns").Get(ctx, "x", get)
	_, _ = c.BatchV1().Jobs("ns").Get(ctx, "x", get)
	_, _ = c.AutoscalingV2().HorizontalPodAutoscalers("ns").Get(ctx, "x", get)
	_, _ = c.CoordinationV1().Leases("ns").Get(ctx, "x", get)
	_, _ = c.DiscoveryV1().EndpointSlices("ns").Get(ctx, "x", get)
	_, _ = c.Discovery().ServerResourcesForGroupVersion("apps/v1")
	want := []string{
		"/api/v1/namespaces/ns/pods/x",
		"/apis/apps/v1/namespaces/ns/deployments/x",
		"/apis/batch/v1/namespaces/ns/jobs/x",
		"/apis/autoscaling/v2/namespaces/ns/horizontalpodautoscalers/x",
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases/x",
		"/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices/x",
		"/apis/apps/v1",
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != len(want) {
		t.Fatalf("requests %v, want %v", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Errorf("request %d: %s, want %s", i, paths[i], want[i])
		}
		if agents[i] != rest.DefaultKubernetesUserAgent() {
			t.Errorf("request %d: user agent %q, want the default", i, agents[i])
		}
	}
}

func TestNewRefusesQPSWithoutBurst(t *testing.T) {
	if _, err := New(&rest.Config{Host: "http://localhost", QPS: 5}); err == nil {
		t.Error("QPS without burst accepted")
	}
}
