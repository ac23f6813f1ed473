// Package dashboard is the web dashboard of `kubectl workload dashboard`: an HTTP server on the
// person's machine, acting with their kubeconfig credentials, that shows the workloads of our
// kinds and the releases of Canaries live (server-sent events fed by one watch per resource,
// shared by every tab), and runs the verbs' own code for its buttons. Every request must carry
// the random token of the URL the command printed; a POST must carry it in a header too. The
// page is plain HTML, CSS and JavaScript embedded in the binary (assets/).
package dashboard

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/workload"
)

//go:embed assets
var assets embed.FS

// TokenHeader carries the token on every POST: a page of another origin can make the browser
// send a form or a cookie, but not a custom header, so this header is the CSRF check.
const TokenHeader = "X-Workload-Token"

// debounce gathers the changes of a burst (a Deployment scaling moves many pods) into one
// update of the page.
const debounce = 200 * time.Millisecond

// keepAlive is how often an idle event stream gets a comment, so that proxies and the browser
// keep it open.
const keepAlive = 20 * time.Second

// Config is what a dashboard serves and how.
type Config struct {
	// Token is the secret part of every URL, and the value of TokenHeader on POSTs.
	Token string
	// ReadOnly refuses every action.
	ReadOnly bool
	// Namespace is the only namespace served; "" serves every namespace (-A).
	Namespace string
	Reader
}

// Server serves the dashboard.
type Server struct {
	cfg Config
	hub *Hub

	mu    sync.Mutex
	views map[string]cachedView
}

type cachedView struct {
	version uint64
	data    []byte
}

// New returns a server of hub's caches.
func New(cfg Config, hub *Hub) *Server {
	return &Server{cfg: cfg, hub: hub, views: map[string]cachedView{}}
}

// Handler is the dashboard's HTTP handler: 401 for any request whose path does not start with
// /TOKEN/, before anything else is looked at.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.asset("index.html"))
	mux.HandleFunc("GET /app.js", s.asset("app.js"))
	mux.HandleFunc("GET /style.css", s.asset("style.css"))
	mux.HandleFunc("GET /api/list", s.getView)
	mux.HandleFunc("GET /api/release", s.getView)
	mux.HandleFunc("GET /api/stream", s.stream)
	mux.HandleFunc("POST /api/action", s.post(false))
	mux.HandleFunc("POST /api/preview", s.post(true))
	prefix := "/" + s.cfg.Token
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		if s.cfg.Token == "" || !validToken(r.URL.Path, prefix) {
			http.Error(w, "401 unauthorized: open the URL `kubectl workload dashboard` printed (it carries the token)", http.StatusUnauthorized)
			return
		}
		rest := r.URL.Path[len(prefix):]
		if rest == "" {
			http.Redirect(w, r, prefix+"/", http.StatusFound)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = rest
		r2.URL.RawPath = ""
		mux.ServeHTTP(w, r2)
	})
}

// validToken compares the path's first segment with the token in constant time.
func validToken(p, prefix string) bool {
	seg := p
	if i := strings.Index(p[1:], "/"); i >= 0 {
		seg = p[:i+1]
	}
	return subtle.ConstantTimeCompare([]byte(seg), []byte(prefix)) == 1
}

// secure sets the headers of every answer: nothing but the dashboard's own files runs in the
// page, no other site may frame it (a click on a framed button would be the person's), no URL
// with the token leaves as a Referer, and nothing is cached.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

func (s *Server) asset(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, err := assets.ReadFile(path.Join("assets", name))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
		_, _ = w.Write(data)
	}
}

// view builds the JSON of the page a request asks for (the list, or ?kind=&namespace=&name=),
// cached until the hub sees the next change, so that tabs on the same page share it.
func (s *Server) view(ctx context.Context, q map[string][]string, release bool) ([]byte, int) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	key := "list"
	if release {
		key = strings.Join([]string{"release", get("kind"), get("namespace"), get("name")}, "/")
	}
	version := s.hub.Version()
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.views[key]; ok && v.version == version {
		return v.data, http.StatusOK
	}
	var page interface{}
	if !release {
		scope := "all namespaces"
		if s.cfg.Namespace != "" {
			scope = "namespace " + s.cfg.Namespace
		}
		page = BuildList(s.hub, scope, s.cfg.ReadOnly)
	} else {
		k, ok := workload.KindFor(get("kind"))
		if !ok {
			return []byte(fmt.Sprintf(`{"error":%q}`, "unknown kind "+get("kind"))), http.StatusBadRequest
		}
		if err := s.inScope(get("namespace")); err != nil {
			return []byte(fmt.Sprintf(`{"error":%q}`, err.Error())), http.StatusNotFound
		}
		page = BuildRelease(ctx, s.hub, s.cfg.Reader, k, get("namespace"), get("name"), s.cfg.ReadOnly)
	}
	data, err := json.Marshal(page)
	if err != nil {
		return []byte(fmt.Sprintf(`{"error":%q}`, err.Error())), http.StatusInternalServerError
	}
	for k, v := range s.views {
		if v.version != version { // pages of an older state: rebuilt if asked again
			delete(s.views, k)
		}
	}
	s.views[key] = cachedView{version: version, data: data}
	return data, http.StatusOK
}

func (s *Server) inScope(namespace string) error {
	if s.cfg.Namespace != "" && namespace != s.cfg.Namespace {
		return fmt.Errorf("namespace %q is outside this dashboard's namespace %q (start it with -A or -n %s)", namespace, s.cfg.Namespace, namespace)
	}
	return nil
}

func (s *Server) getView(w http.ResponseWriter, r *http.Request) {
	data, code := s.view(r.Context(), r.URL.Query(), r.URL.Path == "/api/release")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// stream is the page's server-sent event stream: the page's JSON now, then again after every
// change the watches see (gathered over debounce), when it differs from the last one sent.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	q := r.URL.Query()
	release := q.Get("view") == "release"
	wake, stop := s.hub.Subscribe()
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	var last []byte
	send := func() bool {
		data, _ := s.view(r.Context(), q, release)
		if string(data) == string(last) {
			return true
		}
		last = data
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !send() {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-wake:
			select {
			case <-r.Context().Done():
				return
			case <-time.After(debounce):
			}
			if !send() {
				return
			}
		}
	}
}

// ActionRequest is the body of a POST: which button, on which workload's page.
type ActionRequest struct {
	Action    Action `json:"action"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// post runs an action (preview: under --dry-run=client, which changes nothing and says what
// would be sent). It refuses, before reading anything, a request without the token header and
// (for actions) any request to a read-only dashboard.
func (s *Server) post(preview bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), []byte(s.cfg.Token)) != 1 {
			writeResult(w, Result{Error: "403 forbidden: a POST must carry the token in the " + TokenHeader + " header; nothing was changed", Code: http.StatusForbidden})
			return
		}
		if !preview && s.cfg.ReadOnly {
			writeResult(w, Result{Error: "this dashboard is read-only (--read-only): nothing was changed", Code: http.StatusForbidden})
			return
		}
		var req ActionRequest
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeResult(w, Result{Error: "the body must be application/json", Code: http.StatusUnsupportedMediaType})
			return
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			writeResult(w, Result{Error: "reading the request: " + err.Error(), Code: http.StatusBadRequest})
			return
		}
		dryRun := util.DryRunNone
		if preview {
			dryRun = util.DryRunClient
		}
		writeResult(w, s.act(r.Context(), req, dryRun))
	}
}

// act resolves the request's object and runs the action on it.
func (s *Server) act(ctx context.Context, req ActionRequest, dryRun util.DryRunStrategy) Result {
	k, ok := workload.KindFor(req.Kind)
	if !ok {
		return Result{Error: fmt.Sprintf("unknown kind %q", req.Kind), Code: http.StatusBadRequest}
	}
	if err := s.inScope(req.Namespace); err != nil {
		return Result{Error: err.Error(), Code: http.StatusNotFound}
	}
	ref := workload.Ref{Kind: k, Name: req.Name}
	var c *v1alpha1.Canary
	if k.Name == workload.Canary.Name && req.Action == Undo {
		obj, err := workload.Get(ctx, s.cfg.Dyn, req.Namespace, ref)
		if err != nil {
			return Result{Error: err.Error(), Code: errorCode(err)}
		}
		if c, err = workload.AsCanary(obj); err != nil {
			return Result{Error: err.Error(), Code: http.StatusInternalServerError}
		}
	}
	target, err := ActionTarget(req.Action, k, req.Name, c)
	if err != nil {
		if err == errNotOffered {
			err = fmt.Errorf("%s: %s does not act on a %s", ref, req.Action, k.Name)
		}
		return Result{Error: err.Error(), Code: http.StatusBadRequest}
	}
	return RunAction(ctx, s.cfg.Dyn, req.Namespace, target, req.Action, dryRun)
}

func writeResult(w http.ResponseWriter, res Result) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(res.Code)
	_ = json.NewEncoder(w).Encode(res)
}
