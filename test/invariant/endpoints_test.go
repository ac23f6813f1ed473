package invariant

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	k8sfake "k8s.io/client-go/kubernetes/fake"
)

// A pod belongs to the Deployment whose name, with a dash, is the longest prefix of its name:
// checkout-canary's pods also start with "checkout-".
func TestVersionOf(t *testing.T) {
	versions := []string{"checkout", "checkout-canary"}
	for pod, want := range map[string]string{
		"checkout-6f9c-abcde":        "checkout",
		"checkout-canary-5b7d-klmno": "checkout-canary",
		"checkoutx-1":                "",
		"payments-1":                 "",
	} {
		if got := VersionOf(pod, versions); got != want {
			t.Errorf("VersionOf(%q) = %q, want %q", pod, got, want)
		}
	}
}

// slice is an EndpointSlice of Service checkout holding the pods named.
func slice(name string, pods ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
		Labels: map[string]string{discoveryv1.LabelServiceName: "checkout"}}}
	for _, p := range pods {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: p}})
	}
	return s
}

// One version is fine; a slice that gains a pod of the other version is reported at once.
func TestOneVersionReportsBothVersions(t *testing.T) {
	kube := k8sfake.NewClientset(slice("checkout-a", "checkout-1", "checkout-2"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := OneVersion(ctx, kube, "shop", "checkout", "checkout", "checkout-canary")
	if len(w.Violations()) != 0 {
		t.Fatalf("violations with one version: %q", w.Violations())
	}
	if _, err := kube.DiscoveryV1().EndpointSlices("shop").Update(ctx, slice("checkout-a", "checkout-1", "checkout-canary-1"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return w.Count() > 0, nil
	}); err != nil {
		t.Fatalf("no violation reported with both versions (events %d)", w.Events())
	}
	w.Stop()
	if v := w.Violations(); len(v) != 1 || !strings.Contains(v[0], `selects pods of 2 versions: "checkout": 1 endpoints, "checkout-canary": 1 endpoints`) {
		t.Errorf("violations %q", v)
	}
}

// pod is pod name of namespace shop running image.
func pod(name, image string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}
}

// OneTemplate tells versions by the pods themselves: pods of two Deployments on one image are
// one version; a pod on another image beside them is reported at once.
func TestOneTemplateTellsVersionsByPod(t *testing.T) {
	kube := k8sfake.NewClientset(slice("checkout-a", "checkout-1", "checkout-canary-1"),
		pod("checkout-1", "v2"), pod("checkout-canary-1", "v2"), pod("checkout-2", "v1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := OneTemplate(ctx, kube, "shop", "checkout", func(p *corev1.Pod) string { return p.Spec.Containers[0].Image })
	if len(w.Violations()) != 0 {
		t.Fatalf("violations with one image on two Deployments: %q", w.Violations())
	}
	if _, err := kube.DiscoveryV1().EndpointSlices("shop").Update(ctx, slice("checkout-a", "checkout-1", "checkout-canary-1", "checkout-2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return w.Count() > 0, nil
	}); err != nil {
		t.Fatalf("no violation reported with two images (events %d)", w.Events())
	}
	w.Stop()
	if v := w.Violations(); len(v) != 1 || !strings.Contains(v[0], `selects pods of 2 versions: "v1": 1 endpoints, "v2": 2 endpoints`) {
		t.Errorf("violations %q", v)
	}
}
