package analysis

import (
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
)

// Env is what providers need from the process that runs checks; set what the checks in use
// need (Client for job, Pods for podHealth).
type Env struct {
	Client kubernetes.Interface
	Jobs   batchlisters.JobLister
	Pods   corelisters.PodLister
	// Transport is used for Prometheus queries; nil means http.DefaultTransport.
	Transport http.RoundTripper
}

// Target is what a check measures for: the release's namespace and owner, the name of this
// run of the check and the canary's pods.
type Target struct {
	Namespace string
	// Owner owns the Jobs a job check creates (the Canary).
	Owner metav1.OwnerReference
	// Run is unique per run of a check in the namespace, e.g. "<canary>-<step>-<check>".
	Run string
	// CanaryPods selects the canary's pods for podHealth.
	CanaryPods labels.Selector
}

// Provider builds the provider of check for target.
func (e Env) Provider(check *appsv1alpha1.AnalysisCheck, t Target) (Provider, error) {
	switch p := check.Provider; {
	case p.Prometheus != nil:
		return NewPrometheus(p.Prometheus.Address, p.Prometheus.Query, e.Transport)
	case p.Job != nil:
		if e.Client == nil {
			return nil, fmt.Errorf("check %s: job provider needs a client", check.Name)
		}
		return &Job{Client: e.Client, Jobs: e.Jobs, Namespace: t.Namespace, Owner: t.Owner, Run: t.Run, Template: p.Job.Template}, nil
	case p.PodHealth != nil:
		if e.Pods == nil || t.CanaryPods == nil {
			return nil, fmt.Errorf("check %s: podHealth needs a pod lister and the canary's pod selector", check.Name)
		}
		return PodHealth{Pods: e.Pods.Pods(t.Namespace), Selector: t.CanaryPods}, nil
	}
	return nil, fmt.Errorf("check %s sets no provider", check.Name)
}
