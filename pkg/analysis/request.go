package analysis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/kubeclient"
)

// SecretKey is a key of a Secret in the release's namespace.
type SecretKey struct{ Name, Key string }

// SecretReader reads one key of a Secret.
type SecretReader func(ctx context.Context, ref SecretKey) (string, error)

// secretReader reads keys of Secrets of namespace with a GET of each Secret alone, at each
// measurement (a rotated token takes effect at once): the agent caches no Secret and reads
// none a check does not name. nil without a client.
func secretReader(client kubeclient.Interface, namespace string) SecretReader {
	if client == nil {
		return nil
	}
	return func(ctx context.Context, ref SecretKey) (string, error) {
		s, err := client.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
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

func keyOf(s appsv1alpha1.SecretValueSource) SecretKey {
	return SecretKey{Name: s.SecretKeyRef.Name, Key: s.SecretKeyRef.Key}
}

// headerSet is the headers a check sends: literal ones, and ones read from Secrets (by header
// name), with a prefix before the Secret's value ("Bearer ").
type headerSet struct {
	static  http.Header
	secrets map[string]secretHeader
	read    SecretReader
}

type secretHeader struct {
	key    SecretKey
	prefix string
	// basicUser makes the value basic auth: base64 of user:secret.
	basicUser string
}

func newHeaderSet(headers []appsv1alpha1.WebHeader, read SecretReader) *headerSet {
	h := &headerSet{static: http.Header{}, secrets: map[string]secretHeader{}, read: read}
	for _, x := range headers {
		switch {
		case x.Value != nil:
			h.static.Set(x.Name, *x.Value)
		case x.ValueFrom != nil:
			h.secrets[http.CanonicalHeaderKey(x.Name)] = secretHeader{key: keyOf(*x.ValueFrom)}
		}
	}
	return h
}

// apply sets the headers on req, reading the Secrets they come from.
func (h *headerSet) apply(ctx context.Context, req *http.Request) error {
	for k, v := range h.static {
		req.Header[k] = v
	}
	for name, s := range h.secrets {
		if h.read == nil {
			return fmt.Errorf("header %s: no client to read Secret %s", name, s.key.Name)
		}
		v, err := h.read(ctx, s.key)
		if err != nil {
			return fmt.Errorf("header %s: %v", name, err)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %s: the value in Secret %s key %s holds a line break", name, s.key.Name, s.key.Key)
		}
		if s.basicUser != "" {
			v = "Basic " + base64.StdEncoding.EncodeToString([]byte(s.basicUser+":"+v))
		}
		req.Header.Set(name, s.prefix+v)
	}
	return nil
}

// headerTransport sets a check's headers on each request, and verifies TLS against the CA
// from a Secret when the check names one.
type headerTransport struct {
	base       http.RoundTripper
	headers    *headerSet
	ca         *SecretKey
	serverName string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if err := t.headers.apply(req.Context(), req); err != nil {
		return nil, err
	}
	base := t.base
	if t.ca != nil || t.serverName != "" {
		tr, err := t.tlsTransport(req.Context())
		if err != nil {
			return nil, err
		}
		defer tr.CloseIdleConnections()
		base = tr
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(req)
}

// tlsTransport is a transport for one request that trusts the check's CA (read now) and
// expects its server name; certificates are always verified.
func (t *headerTransport) tlsTransport(ctx context.Context) (*http.Transport, error) {
	cfg := &tls.Config{ServerName: t.serverName, MinVersion: tls.VersionTLS12}
	if t.ca != nil {
		if t.headers.read == nil {
			return nil, fmt.Errorf("tls.ca: no client to read Secret %s", t.ca.Name)
		}
		pem, err := t.headers.read(ctx, *t.ca)
		if err != nil {
			return nil, fmt.Errorf("tls.ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(pem)) {
			return nil, fmt.Errorf("tls.ca: Secret %s key %s holds no PEM certificate", t.ca.Name, t.ca.Key)
		}
		cfg.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return tr, nil
}
