// Package externalmetrics serves the external metrics API (external.metrics.k8s.io/v1beta1) from
// the test process, so that kube-controller-manager's HorizontalPodAutoscaler controller scales
// on a metric the test sets. The API server reaches it through the aggregation layer (an
// APIService backed by an ExternalName Service pointing at loopback) and presents its
// front-proxy client certificate, which the adapter requires; the cluster must be started with
// localcluster.Options.Autoscaling. See docs/testing.md, "Autoscaling".
package externalmetrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	// Group and Version are the API the adapter serves.
	Group   = "external.metrics.k8s.io"
	Version = "v1beta1"
	// serviceNamespace and serviceName name the ExternalName Service the APIService points at.
	serviceNamespace = "kube-system"
	serviceName      = "test-external-metrics"
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// Adapter is a running external metrics server registered with the cluster.
type Adapter struct {
	srv *httptest.Server

	mu     sync.Mutex
	values map[string]int64 // namespace/metric
	reads  map[string]int
}

// Start serves the external metrics API on loopback, registers it with the cluster (an
// ExternalName Service to localhost and an APIService) and waits until the API server reports
// the APIService Available. frontProxyCA verifies the aggregator's client certificate. Stop
// ends it; the registration stays with the cluster.
func Start(ctx context.Context, cfg *rest.Config, frontProxyCA []byte) (*Adapter, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(frontProxyCA) {
		return nil, errors.New("externalmetrics: no front-proxy CA (start the cluster with Options.Autoscaling)")
	}
	a := &Adapter{values: map[string]int64{}, reads: map[string]int{}}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	a.srv.StartTLS()
	if err := a.register(ctx, cfg); err != nil {
		a.srv.Close()
		return nil, err
	}
	return a, nil
}

// Stop stops serving.
func (a *Adapter) Stop() { a.srv.Close() }

// Set makes metric of namespace read value from now on.
func (a *Adapter) Set(namespace, metric string, value int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.values[namespace+"/"+metric] = value
}

// Reads is how many times metric of namespace was read, which tells that an autoscaler uses it.
func (a *Adapter) Reads(namespace, metric string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reads[namespace+"/"+metric]
}

func (a *Adapter) register(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, port, err := net.SplitHostPort(a.srv.Listener.Addr().String())
	if err != nil {
		return err
	}
	portNum, _ := strconv.Atoi(port)
	// The aggregator dials an ExternalName Service's name at the APIService's port: a Service
	// of another type would need Endpoints, which refuse loopback addresses.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: serviceName, Namespace: serviceNamespace},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := kube.CoreV1().Services(serviceNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("externalmetrics: %w", err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": Version + "." + Group},
		"spec": map[string]any{
			"group": Group, "version": Version,
			"service": map[string]any{"namespace": serviceNamespace, "name": serviceName, "port": int64(portNum)},
			// httptest's serving certificate is for 127.0.0.1 and example.com, not the Service's
			// DNS name: the test trusts loopback, the adapter still checks the aggregator.
			"insecureSkipTLSVerify": true,
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       int64(100),
		},
	}}
	if _, err := dyn.Resource(apiServices).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("externalmetrics: %w", err)
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := dyn.Resource(apiServices).Get(ctx, Version+"."+Group, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err != nil {
			last = fmt.Sprint(err)
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Available" {
				last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
				return m["status"] == "True", nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("externalmetrics: APIService %s.%s not Available (%s): %w", Version, Group, last, err)
	}
	return nil
}

// serve answers discovery and metric reads; everything else is 404.
func (a *Adapter) serve(w http.ResponseWriter, r *http.Request) {
	if len(r.TLS.PeerCertificates) == 0 {
		http.Error(w, "no client certificate", http.StatusUnauthorized)
		return
	}
	gv := "/apis/" + Group + "/" + Version
	switch {
	case r.URL.Path == "/apis":
		writeJSON(w, metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{
				Name:             Group,
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: Group + "/" + Version, Version: Version}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version},
			}},
		})
	case r.URL.Path == gv:
		writeJSON(w, metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: Group + "/" + Version,
			APIResources: []metav1.APIResource{{Name: "*", Namespaced: true, Kind: "ExternalMetricValueList", Verbs: []string{"get"}}},
		})
	case strings.HasPrefix(r.URL.Path, gv+"/namespaces/"):
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, gv+"/namespaces/"), "/")
		if len(parts) != 2 {
			http.NotFound(w, r)
			return
		}
		a.serveMetric(w, parts[0], parts[1])
	default:
		http.NotFound(w, r)
	}
}

// metricValue is the wire form of k8s.io/metrics' ExternalMetricValue, written here rather
// than adding that module for two structs.
type metricValue struct {
	MetricName   string            `json:"metricName"`
	MetricLabels map[string]string `json:"metricLabels"`
	Timestamp    metav1.Time       `json:"timestamp"`
	Value        resource.Quantity `json:"value"`
}

type metricValueList struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ListMeta `json:"metadata"`
	Items           []metricValue   `json:"items"`
}

// serveMetric answers one metric's read: a one-item list when the test set it, an empty list
// (which the HPA reports as an error) when not.
func (a *Adapter) serveMetric(w http.ResponseWriter, namespace, metric string) {
	a.mu.Lock()
	key := namespace + "/" + metric
	a.reads[key]++
	v, ok := a.values[key]
	a.mu.Unlock()
	list := metricValueList{TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: Group + "/" + Version}, Items: []metricValue{}}
	if ok {
		list.Items = append(list.Items, metricValue{
			MetricName: metric, MetricLabels: map[string]string{}, Timestamp: metav1.Now(), Value: *resource.NewQuantity(v, resource.DecimalSI),
		})
	}
	writeJSON(w, list)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
