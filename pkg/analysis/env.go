package analysis

import (
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// Env is what providers need from the process that runs checks; set what the checks in use
// need (Client for job, Pods or Client for podHealth).
type Env struct {
	Client kubeclient.Interface
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
		return e.prometheus(p.Prometheus, t.Namespace)
	case p.Job != nil:
		if e.Client == nil {
			return nil, fmt.Errorf("check %s: job provider needs a client", check.Name)
		}
		return &Job{Client: e.Client, Jobs: e.Jobs, Namespace: t.Namespace, Owner: t.Owner, Run: t.Run, Template: p.Job.Template}, nil
	case p.Web != nil:
		return e.web(p.Web, t.Namespace)
	case p.PodHealth != nil:
		if e.Pods == nil && e.Client == nil || t.CanaryPods == nil {
			return nil, fmt.Errorf("check %s: podHealth needs a pod lister or a client, and the canary's pod selector", check.Name)
		}
		if e.Pods == nil {
			return PodHealth{Client: e.Client, Namespace: t.Namespace, Selector: t.CanaryPods}, nil
		}
		return PodHealth{Pods: e.Pods.Pods(t.Namespace), Selector: t.CanaryPods}, nil
	}
	return nil, fmt.Errorf("check %s sets no provider", check.Name)
}

// web builds the provider of a web check; header values from Secrets are read in namespace at
// each measurement.
func (e Env) web(p *appsv1alpha1.WebProvider, namespace string) (Provider, error) {
	timeout := time.Duration(0)
	if p.TimeoutSeconds != nil {
		timeout = time.Duration(*p.TimeoutSeconds) * time.Second
	}
	rt := &headerTransport{base: e.Transport, headers: newHeaderSet(p.Headers, secretReader(e.Client, namespace))}
	return NewWeb(p.Method, p.URL, p.Body, timeout, rt)
}

// prometheus builds the provider of a Prometheus check: its auth, headers and TLS settings
// travel with each query, Secrets read in namespace at each one.
func (e Env) prometheus(p *appsv1alpha1.PrometheusProvider, namespace string) (Provider, error) {
	headers := newHeaderSet(p.Headers, secretReader(e.Client, namespace))
	if a := p.Auth; a != nil {
		switch {
		case a.BearerToken != nil:
			headers.secrets["Authorization"] = secretHeader{key: keyOf(*a.BearerToken), prefix: "Bearer "}
		case a.Basic != nil:
			headers.secrets["Authorization"] = secretHeader{key: keyOf(a.Basic.Password), basicUser: a.Basic.Username}
		}
	}
	rt := &headerTransport{base: e.Transport, headers: headers}
	if p.TLS != nil {
		rt.serverName = p.TLS.ServerName
		if p.TLS.CA != nil {
			k := keyOf(*p.TLS.CA)
			rt.ca = &k
		}
	}
	return NewPrometheus(p.Address, p.Query, rt)
}
