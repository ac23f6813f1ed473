package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/cmd"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/localcluster"
)

const (
	replicas = 4
	name     = "checkout" // of the Canary and its stable Deployment
)

// env is one test's namespace with a stable Deployment at full size and the agent's canary
// controller.
type env struct {
	*e2eenv.Env
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{Env: e2eenv.Setup(t)}
	e.WaitNamespaceGone = false
	labels := map[string]string{"app": name, "track": "stable"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: podTemplate(labels, "nginx:1.26")}}
	e2eenv.Create(t, e.Ctx, e.Kube.AppsV1().Deployments(e.NS), d)
	e.Eventually("the stable Deployment's pods to be available", func() (bool, string) {
		got, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.AvailableReplicas == replicas, fmt.Sprintf("%d available", got.Status.AvailableReplicas)
	})
	e.StartAgent("canary")
	return e
}

func podTemplate(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}}}
}

// createCanary releases nginx 1.27 through steps (a final step of every replica follows).
func (e *env) createCanary(analysis []v1alpha1.AnalysisCheck, steps ...v1alpha1.CanaryStep) {
	e.T.Helper()
	c := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.CanarySpec{
		Replicas:  replicas,
		StableRef: v1alpha1.StableRef{Name: name},
		Canary: v1alpha1.CanaryTarget{Name: name + "-canary",
			Template: podTemplate(map[string]string{"app": name, "track": "canary"}, "nginx:1.27")},
		Steps:    steps,
		Analysis: analysis,
	}}
	e2eenv.Create(e.T, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), c)
}

func (e *env) canary() *v1alpha1.Canary {
	e.T.Helper()
	return e2eenv.Get(e.T, e.Ctx, e.Apps.AppsV1alpha1().Canaries(e.NS), name)
}

// waitCanary waits until cond holds of the Canary.
func (e *env) waitCanary(what string, cond func(c *v1alpha1.Canary) bool) *v1alpha1.Canary {
	e.T.Helper()
	var c *v1alpha1.Canary
	e.Eventually(what, func() (bool, string) {
		got, err := e.Apps.AppsV1alpha1().Canaries(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c = got
		return cond(got), fmt.Sprintf("phase %s, batch %d, approved %d", got.Status.Phase, got.Status.CurrentBatch, got.Spec.ApprovedBatch)
	})
	return c
}

// pausedAt reports whether the Canary waits for a promote at batch k.
func pausedAt(c *v1alpha1.Canary, k int32) bool {
	if c.Status.CurrentBatch != k || c.Generation != c.Status.ObservedGeneration {
		return false
	}
	for _, b := range c.Status.Batches {
		if b.Index == k {
			return b.State == v1alpha1.BatchPaused
		}
	}
	return false
}

// syncBuffer is the dashboard's output, written by its goroutine and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var urlLine = regexp.MustCompile(`at (http://127\.0\.0\.1:[0-9]+/[A-Za-z0-9_-]+/) \(Ctrl-C stops it\)`)

// startDashboard runs `kubectl workload dashboard -n NS --no-open --port 0 ARGS…` through the
// plugin's command tree with the cluster's kubeconfig, until the test ends; it returns the URL
// the command printed.
func (e *env) startDashboard(args ...string) string {
	e.T.Helper()
	var out, errOut syncBuffer
	root := cmd.NewCmdWorkload(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	root.SetArgs(append([]string{"dashboard", "--kubeconfig", e.Cluster.Kubeconfig, "-n", e.NS, "--no-open", "--port", "0"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	e.T.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.T.Errorf("dashboard %q: %v", args, err)
		}
	})
	var url string
	e.Eventually("the dashboard to print its URL", func() (bool, string) {
		m := urlLine.FindStringSubmatch(out.String())
		if m == nil {
			return false, out.String() + errOut.String()
		}
		if lines := strings.Count(out.String(), "\n"); lines != 1 {
			e.T.Errorf("the dashboard printed %d lines, want 1: %q", lines, out.String())
		}
		url = m[1]
		return true, ""
	})
	return url
}

// chromiumPath is Debian's chromium; `make chromium` (part of `make test`) installs it.
func chromiumPath(t *testing.T) string {
	for _, p := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatal("chromium is not installed: run `make chromium` (apt-get install -y chromium)")
	return ""
}

// browser starts a headless Chromium with a fresh profile, closed when the test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// run runs browser actions, bounded by e2eenv.Safety; on failure it shows the page's text.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, e2eenv.Safety)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage: %s", what, err, page)
	}
}

// get runs one browser action that returns a value.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, e2eenv.Safety)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// poll waits until a JavaScript expression is true in the page.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(e2eenv.Safety))
}

// visible waits until the element a CSS selector names is visible.
func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

// screenshot takes a picture of the page as NAME.png: into docs/images when
// $DASHBOARD_SCREENSHOTS is set (`make dashboard-screenshots` refreshes those of
// docs/dashboard.md), else into the test's temporary directory, so that `make test` leaves the
// tree as it found it.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot %s: not a PNG (%d bytes)", name, len(png))
	}
	path := filepath.Join(t.TempDir(), name+".png")
	if os.Getenv("DASHBOARD_SCREENSHOTS") != "" {
		path = localcluster.RepoPath("docs", "images", name+".png")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// click presses an action's button and confirms; it returns the confirmation's text.
func click(t *testing.T, ctx context.Context, action, shot string) string {
	t.Helper()
	button := chromedp.CSS(`button[data-action="` + action + `"]`)
	run(t, ctx, "clicking "+action, chromedp.WaitEnabled(button), chromedp.Click(button), visible(`#confirm[open] #confirm-ok`))
	text := get(t, ctx, "the confirmation", chromedp.Text(chromedp.CSS(`#confirm`)))
	if shot != "" {
		screenshot(t, ctx, shot)
	}
	run(t, ctx, "confirming "+action, chromedp.Click(chromedp.CSS(`#confirm-ok`)), visible(`#result`))
	return text
}

// result waits until the line the page shows after an action contains want.
func result(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	run(t, ctx, "the page to say "+want, poll(fmt.Sprintf(`document.querySelector('#result').textContent.includes(%q)`, want)))
}
