package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// webTimeout bounds a request whose check sets no timeoutSeconds.
const webTimeout = 10 * time.Second

// maxWebBody bounds the response body read: a check judges a small JSON document, and a huge
// one must not fill the agent's memory.
const maxWebBody = 1 << 20

// Web measures with one HTTP request: the result is the decoded JSON body (a map, a list, a
// number, a string, a bool or nil).
type Web struct {
	Method  string
	URL     string
	Body    string
	Timeout time.Duration
	// Client sends the request; its transport sets the check's headers and verifies TLS
	// certificates.
	Client *http.Client
}

// NewWeb returns a provider for rawURL, refusing a URL that is not http(s) with a host. rt
// sends the requests (it sets the check's headers).
func NewWeb(method, rawURL, body string, timeout time.Duration, rt http.RoundTripper) (*Web, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("web url %q: %v", rawURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("web url %q: only http and https URLs with a host are allowed", rawURL)
	}
	if method == "" {
		method = http.MethodGet
	}
	if timeout <= 0 {
		timeout = webTimeout
	}
	return &Web{Method: method, URL: u.String(), Body: body, Timeout: timeout,
		Client: &http.Client{Transport: rt, CheckRedirect: httpOnlyRedirects}}, nil
}

// httpOnlyRedirects follows a redirect only to another http(s) URL, at most 5 times.
func httpOnlyRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("redirect to %s refused: only http and https", req.URL.Scheme)
	}
	if len(via) >= 5 {
		return fmt.Errorf("stopped after 5 redirects")
	}
	return nil
}

// Measure sends the request and decodes the JSON answer. A status other than 2xx is an error.
func (w *Web) Measure(ctx context.Context, _ int32) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	var body io.Reader
	if w.Body != "" {
		body = strings.NewReader(w.Body)
	}
	req, err := http.NewRequestWithContext(ctx, w.Method, w.URL, body)
	if err != nil {
		return nil, fmt.Errorf("web request: %v", err)
	}
	if w.Body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := w.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("web request: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWebBody+1))
	if err != nil {
		return nil, fmt.Errorf("web response: %v", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("web response %s: %s", resp.Status, clip(string(bytes.TrimSpace(data))))
	}
	if len(data) > maxWebBody {
		return nil, fmt.Errorf("web response larger than %d bytes", maxWebBody)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("web response is not JSON: %v", err)
	}
	return v, nil
}
