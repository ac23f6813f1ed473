package analysis

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

func TestEnvProvider(t *testing.T) {
	full := Env{Client: fake.NewClientset(), Pods: corelisters.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))}
	target := Target{Namespace: "ns", Owner: owner, Run: "web-1-c", CanaryPods: labels.Everything()}
	for _, tc := range []struct {
		name     string
		env      Env
		provider appsv1alpha1.AnalysisProvider
		want     string // the provider's type, or the error
	}{
		{"prometheus", full, appsv1alpha1.AnalysisProvider{Prometheus: &appsv1alpha1.PrometheusProvider{Address: "http://127.0.0.1:9090", Query: "up"}}, "*analysis.Prometheus"},
		{"job", full, appsv1alpha1.AnalysisProvider{Job: &appsv1alpha1.JobProvider{}}, "*analysis.Job"},
		{"podHealth", full, appsv1alpha1.AnalysisProvider{PodHealth: &appsv1alpha1.PodHealthProvider{}}, "analysis.PodHealth"},
		{"job without client", Env{}, appsv1alpha1.AnalysisProvider{Job: &appsv1alpha1.JobProvider{}}, "check c: job provider needs a client"},
		{"podHealth without lister", Env{}, appsv1alpha1.AnalysisProvider{PodHealth: &appsv1alpha1.PodHealthProvider{}}, "check c: podHealth needs a pod lister"},
		{"none", full, appsv1alpha1.AnalysisProvider{}, "check c sets no provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.env.Provider(&appsv1alpha1.AnalysisCheck{Name: "c", Provider: tc.provider}, target)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = fmt.Sprintf("%T", p)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
