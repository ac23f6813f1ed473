package fleet

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// health records the outcome of the last request to a member: it answered (any HTTP answer but
// a 5xx or a 401, which say its API server or its credentials are failing), or not.
type health struct {
	mu  sync.Mutex
	bad string
	// changed is called, outside the lock, when the member goes from answering to not or back:
	// its UnitedDeployments' statuses say so.
	changed func()
}

func (h *health) get() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bad == "", h.bad
}

func (h *health) set(bad string) {
	h.mu.Lock()
	flipped := (h.bad == "") != (bad == "")
	h.bad = bad
	h.mu.Unlock()
	if flipped && h.changed != nil {
		h.changed()
	}
}

func (h *health) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		switch {
		case err != nil:
			h.set("the member's API server did not answer: " + Redact(err.Error()))
		case resp.StatusCode == http.StatusUnauthorized:
			h.set("the member's API server refused the agent's credentials (401 Unauthorized)")
		case resp.StatusCode >= 500:
			h.set(fmt.Sprintf("the member's API server failed: %s", resp.Status))
		default:
			h.set("")
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

var (
	// schemeCredential is an Authorization value: "Bearer xyz", "Basic xyz".
	schemeCredential = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[^\s"',;]+`)
	// namedCredential is a token, password or secret given as a field: token=xyz, "token": "xyz".
	namedCredential = regexp.MustCompile(`(?i)("?(?:[a-z_-]*token|password|secret)"?\s*[:=]\s*"?)[^\s"',;}]+`)
)

// Redact removes from a message anything shaped like a credential, so that an error from a
// member, or from its exec credential plugin, never carries one into a log, an Event or a
// status.
func Redact(msg string) string {
	msg = schemeCredential.ReplaceAllString(msg, "$1 [redacted]")
	return namedCredential.ReplaceAllString(msg, "${1}[redacted]")
}

// RedactError is err with Redact applied to its message. An API server's refusal stays one
// (apierrors.APIStatus, with its reason, code and details, their messages redacted), so that
// callers still tell a conflict or a missing object from other failures; any other error
// becomes a plain one carrying the redacted message only.
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return errors.New(Redact(err.Error()))
	}
	s := status.Status()
	s.Message = Redact(err.Error())
	if s.Details != nil {
		d := *s.Details
		d.Causes = append(d.Causes[:0:0], d.Causes...)
		for i := range d.Causes {
			d.Causes[i].Message = Redact(d.Causes[i].Message)
		}
		s.Details = &d
	}
	return &apierrors.StatusError{ErrStatus: s}
}
