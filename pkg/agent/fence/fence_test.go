package fence

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestValidity(t *testing.T) {
	for _, tc := range []struct{ lease, want time.Duration }{
		{15 * time.Second, 13250 * time.Millisecond}, // 15 s x 0.95 - 1 s
		{60 * time.Second, 56 * time.Second},
		{5 * time.Second, 4250 * time.Millisecond}, // the delivery margin capped at a tenth
		{0, 0},
	} {
		if got := Validity(tc.lease); got != tc.want {
			t.Errorf("Validity(%v) = %v, want %v", tc.lease, got, tc.want)
		}
	}
}

func done(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// waitDone waits for the timer the fake clock fired (in a goroutine of its own) to end ctx.
func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: term did not end", what)
	}
}

func TestFenceOpensOnRenewalAndClosesAtValidity(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	if err := f.Check(); !errors.Is(err, ErrClosed) {
		t.Fatalf("new fence: Check() = %v, want ErrClosed", err)
	}
	if !done(f.Term()) {
		t.Fatal("new fence: its term has not ended")
	}

	sent := clk.Now()
	clk.Step(2 * time.Second) // the renewal took 2 s to succeed: validity counts from its sending
	f.Renewed(sent, 15*time.Second)
	term := f.Term()
	if err := f.Check(); err != nil || done(term) {
		t.Fatalf("after a renewal: Check() = %v, term ended %v; want open", err, done(term))
	}
	clk.SetTime(sent.Add(13250*time.Millisecond - time.Nanosecond))
	if err := f.Check(); err != nil || done(term) {
		t.Fatalf("just before validity ends: Check() = %v, term ended %v; want open", err, done(term))
	}
	clk.SetTime(sent.Add(13250 * time.Millisecond))
	if err := f.Check(); !errors.Is(err, ErrClosed) {
		t.Fatalf("at the end of validity: Check() = %v, want ErrClosed", err)
	}
	waitDone(t, term, "at the end of validity")
}

// A process frozen past its validity sees the fence closed by reading its clock, before any
// timer has had a chance to run.
func TestFenceClosedAfterFreezeBeforeTimerRuns(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	f.Renewed(clk.Now(), 15*time.Second)
	f.mu.Lock()
	f.timer.Stop() // as if its goroutine had not run yet
	f.mu.Unlock()
	clk.SetTime(epoch.Add(20 * time.Second))
	if err := f.Check(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Check() = %v, want ErrClosed", err)
	}
	if !done(f.Term()) {
		t.Fatal("Term() after the validity: not ended")
	}
}

// A renewal after the fence expired, before its timer ran, still ends the old term.
func TestFenceRenewalAfterExpiryEndsOldTerm(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	f.Renewed(epoch, 15*time.Second)
	old := f.Term()
	f.mu.Lock()
	f.timer.Stop() // as if its goroutine had not run yet
	f.mu.Unlock()
	clk.SetTime(epoch.Add(20 * time.Second))
	f.Renewed(clk.Now(), 15*time.Second)
	if !done(old) {
		t.Fatal("the term of the expired fence did not end")
	}
	if done(f.Term()) || f.Check() != nil {
		t.Fatal("the renewal did not open a new term")
	}
}

func TestFenceRenewalsExtendNeverShorten(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	f.Renewed(epoch, 15*time.Second)
	term := f.Term()
	clk.Step(2 * time.Second)
	f.Renewed(epoch.Add(2*time.Second), 15*time.Second)
	f.Renewed(epoch.Add(time.Second), 15*time.Second) // a late answer to an older renewal
	clk.SetTime(epoch.Add(14 * time.Second))
	if err := f.Check(); err != nil {
		t.Fatalf("14 s after the first renewal, 12 s after the second: Check() = %v, want open", err)
	}
	if f.Term() != term || done(term) {
		t.Fatal("a renewal while open started a new term or ended it")
	}
	clk.SetTime(epoch.Add(15250 * time.Millisecond))
	waitDone(t, term, "at the end of the second renewal's validity")

	// A renewal whose validity has already passed does not open it.
	f.Renewed(epoch.Add(time.Second), 15*time.Second)
	if err := f.Check(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after a stale renewal: Check() = %v, want ErrClosed", err)
	}
	// A fresh one opens a new term.
	f.Renewed(clk.Now(), 15*time.Second)
	if f.Term() == term || done(f.Term()) || f.Check() != nil {
		t.Fatal("a renewal after closing did not open a new term")
	}
}

func TestFenceRevokeAndOpen(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	var changes []bool
	f.OnChange(func(open bool) { changes = append(changes, open) })
	f.Renewed(epoch, 15*time.Second)
	term := f.Term()
	f.Revoke()
	if err := f.Check(); !errors.Is(err, ErrClosed) || !done(term) {
		t.Fatalf("after Revoke: Check() = %v, term ended %v; want closed", err, done(term))
	}
	f.Revoke()
	if want := []bool{true, false}; len(changes) != 2 || changes[0] != want[0] || changes[1] != want[1] {
		t.Fatalf("changes = %v, want %v", changes, want)
	}

	open := Open()
	open.Revoke()
	if err := open.Check(); err != nil || done(open.Term()) {
		t.Fatalf("Open fence after Revoke: Check() = %v, term ended %v; want always open", err, done(open.Term()))
	}
}

// next records the requests that reach it; with block it waits for the request's context.
type next struct {
	seen  []string
	block bool
	body  string
}

func (n *next) RoundTrip(req *http.Request) (*http.Response, error) {
	n.seen = append(n.seen, req.Method)
	if req.Body != nil {
		data, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		n.body = string(data)
	}
	if n.block {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

func request(method, body string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "https://api/apis/apps.workload.dev/v1alpha1/namespaces/a/tapps/x", r)
	return req
}

func TestTransportRefusesWritesWhileClosed(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	n := &next{}
	rt := f.Transport(n)

	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodOptions} {
		if _, err := rt.RoundTrip(request(m, "")); err != nil {
			t.Fatalf("%s while closed: %v, want it passed", m, err)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if _, err := rt.RoundTrip(request(m, `{"a":1}`)); !errors.Is(err, ErrClosed) {
			t.Fatalf("%s while closed: %v, want ErrClosed", m, err)
		}
	}
	if got := strings.Join(n.seen, ","); got != "GET,HEAD,OPTIONS" {
		t.Fatalf("requests sent = %s, want the reads only", got)
	}

	f.Renewed(clk.Now(), 15*time.Second)
	resp, err := rt.RoundTrip(request(http.MethodPost, `{"a":1}`))
	if err != nil {
		t.Fatalf("POST while open: %v", err)
	}
	resp.Body.Close()
	if n.body != `{"a":1}` {
		t.Fatalf("body sent = %q", n.body)
	}
}

func TestTransportCancelsWriteInFlightWhenFenceCloses(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	f.Renewed(clk.Now(), 15*time.Second)
	rt := f.Transport(&next{block: true})
	errc := make(chan error, 1)
	go func() {
		_, err := rt.RoundTrip(request(http.MethodPut, `{}`))
		errc <- err
	}()
	clk.Step(14 * time.Second)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("in-flight PUT: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight PUT not cancelled when the fence closed")
	}
}

func TestTransportBodyCheckedAsSent(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	f.Renewed(clk.Now(), 15*time.Second)
	// The process freezes after RoundTrip's check, before the body is written.
	freeze := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		clk.SetTime(epoch.Add(20 * time.Second))
		_, err := io.ReadAll(req.Body)
		return nil, err
	})
	if _, err := f.Transport(freeze).RoundTrip(request(http.MethodPost, `{"a":1}`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("POST whose body is sent after the fence closed: %v, want ErrClosed", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// fakeLock is a Lease lock with a holder; writes fail with failWrite.
type fakeLock struct {
	identity  string
	holder    string
	failWrite error
	writes    []string
	onWrite   func()
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{HolderIdentity: l.holder}, []byte(l.holder), nil
}
func (l *fakeLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write("create", r)
}
func (l *fakeLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write("update", r)
}
func (l *fakeLock) write(verb string, r resourcelock.LeaderElectionRecord) error {
	l.writes = append(l.writes, verb+" holder="+r.HolderIdentity)
	if l.onWrite != nil {
		l.onWrite()
	}
	if l.failWrite != nil {
		return l.failWrite
	}
	l.holder = r.HolderIdentity
	return nil
}
func (l *fakeLock) RecordEvent(string) {}
func (l *fakeLock) Identity() string   { return l.identity }
func (l *fakeLock) Describe() string   { return "ns/lease" }

func record(holder string, seconds int) resourcelock.LeaderElectionRecord {
	return resourcelock.LeaderElectionRecord{HolderIdentity: holder, LeaseDurationSeconds: seconds}
}

func TestLockOpensFenceFromSendingOfSuccessfulWrite(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	fl := &fakeLock{identity: "me", failWrite: errors.New("conflict")}
	l := f.Lock(fl)
	if err := l.Create(context.Background(), record("me", 15)); err == nil {
		t.Fatal("failed create: no error")
	}
	if f.Check() == nil {
		t.Fatal("failed create opened the fence")
	}
	fl.failWrite = nil
	fl.onWrite = func() { clk.Step(3 * time.Second) } // the write takes 3 s
	if err := l.Update(context.Background(), record("me", 15)); err != nil {
		t.Fatal(err)
	}
	// Open until 13.25 s after the sending, 10.25 s after the answer.
	clk.SetTime(epoch.Add(13 * time.Second))
	if err := f.Check(); err != nil {
		t.Fatalf("13 s after sending: %v, want open", err)
	}
	clk.SetTime(epoch.Add(13250 * time.Millisecond))
	if err := f.Check(); !errors.Is(err, ErrClosed) {
		t.Fatalf("13.25 s after sending: %v, want ErrClosed", err)
	}
}

func TestLockReleaseClosesFenceFirst(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := New(clk)
	fl := &fakeLock{identity: "me"}
	l := f.Lock(fl)
	if err := l.Update(context.Background(), record("me", 15)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	var openDuringRelease error
	fl.onWrite = func() { openDuringRelease = f.Check() }
	if err := l.Update(context.Background(), record("", 1)); err != nil {
		t.Fatalf("release while holding: %v", err)
	}
	if !errors.Is(openDuringRelease, ErrClosed) {
		t.Fatalf("fence during the release = %v, want closed before it was sent", openDuringRelease)
	}
	if got := strings.Join(fl.writes, "; "); got != "update holder=me; update holder=" {
		t.Fatalf("writes = %s", got)
	}
}

func TestLockRefusesReleaseOfLeaseItMayNotHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holder string        // holder in the last Get
		after  time.Duration // since the renewal
	}{
		{"another agent holds it", "other", time.Second},
		{"fence closed", "me", 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch)
			f := New(clk)
			fl := &fakeLock{identity: "me"}
			l := f.Lock(fl)
			if err := l.Update(context.Background(), record("me", 15)); err != nil {
				t.Fatal(err)
			}
			fl.holder = tc.holder
			clk.SetTime(epoch.Add(tc.after))
			if _, _, err := l.Get(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := l.Update(context.Background(), record("", 1)); !errors.Is(err, ErrClosed) {
				t.Fatalf("release: %v, want ErrClosed", err)
			}
			if len(fl.writes) != 1 {
				t.Fatalf("writes = %q, want the release not sent", fl.writes)
			}
			if f.Check() == nil {
				t.Fatal("fence open after a release")
			}
		})
	}
}
