package analysis

import (
	"context"
	"fmt"
	"net/http"
	"time"

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
	case p.Web != nil:
		return e.web(check, p.Web, t.Namespace)
	case p.PodHealth != nil:
		if e.Pods == nil || t.CanaryPods == nil {
			return nil, fmt.Errorf("check %s: podHealth needs a pod lister and the canary's pod selector", check.Name)
		}
		return PodHealth{Pods: e.Pods.Pods(t.Namespace), Selector: t.CanaryPods}, nil
	}
	return nil, fmt.Errorf("check %s sets no provider", check.Name)
}

// web builds the provider of a web check; header values from Secrets are read in namespace at
// each measurement.
func (e Env) web(check *appsv1alpha1.AnalysisCheck, p *appsv1alpha1.WebProvider, namespace string) (Provider, error) {
	headers := http.Header{}
	secrets := map[string]SecretKey{}
	for _, h := range p.Headers {
		switch {
		case h.Value != nil:
			headers.Set(h.Name, *h.Value)
		case h.ValueFrom != nil:
			secrets[h.Name] = SecretKey{Name: h.ValueFrom.SecretKeyRef.Name, Key: h.ValueFrom.SecretKeyRef.Key}
		}
	}
	if len(secrets) > 0 && e.Client == nil {
		return nil, fmt.Errorf("check %s: a header from a Secret needs a client", check.Name)
	}
	timeout := time.Duration(0)
	if p.TimeoutSeconds != nil {
		timeout = time.Duration(*p.TimeoutSeconds) * time.Second
	}
	w, err := NewWeb(p.Method, p.URL, headers, p.Body, timeout, e.Transport)
	if err != nil {
		return nil, err
	}
	w.SecretHeaders, w.Secret = secrets, e.secretReader(namespace)
	return w, nil
}

// secretReader reads one key of a Secret of namespace with a GET of that Secret alone: the agent
// caches no Secret and reads none a check does not name.
func (e Env) secretReader(namespace string) func(context.Context, SecretKey) (string, error) {
	return func(ctx context.Context, ref SecretKey) (string, error) {
		s, err := e.Client.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading Secret %s: %v", ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", fmt.Errorf("Secret %s has no key %s", ref.Name, ref.Key)
		}
		return string(v), nil
	}
}
