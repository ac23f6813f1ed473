package fence

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Transport wraps rt so that every mutating request (anything but GET, HEAD and OPTIONS) is
// refused locally while f is closed, and cancelled if f closes while it is in flight. Its body
// is checked again as it is sent, so a process frozen between the first check and the write to
// the connection, and resumed after the fence closed, aborts the request instead of completing
// it. Reads (lists and watches, which informers need to stay current) always pass. Use it as a
// rest.Config's WrapTransport.
func (f *Fence) Transport(rt http.RoundTripper) http.RoundTripper {
	return &transport{fence: f, next: rt}
}

type transport struct {
	fence *Fence
	next  http.RoundTripper
}

func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !mutating(req.Method) {
		return t.next.RoundTrip(req)
	}
	if err := t.fence.Check(); err != nil {
		closeBody(req)
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	// In flight until the response headers arrive: the API server has decided by then.
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(t.fence.Term(), func() { cancel(ErrClosed) })
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &checkedBody{ReadCloser: req.Body, fence: t.fence}
	}
	resp, err := t.next.RoundTrip(req)
	stop()
	if err != nil {
		cancel(nil)
		if cause := context.Cause(ctx); cause == ErrClosed {
			return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, ErrClosed)
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(nil) }}
	return resp, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// checkedBody fails the request's body as it is read when the fence has closed meanwhile.
type checkedBody struct {
	io.ReadCloser
	fence *Fence
}

func (b *checkedBody) Read(p []byte) (int, error) {
	if err := b.fence.Check(); err != nil {
		return 0, err
	}
	return b.ReadCloser.Read(p)
}

// cancelOnClose releases the request's context once its response has been read.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
