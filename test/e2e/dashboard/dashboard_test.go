package dashboard

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/pkg/dashboard"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

func step(replicas int32, pause *v1alpha1.CanaryPause, checks ...string) v1alpha1.CanaryStep {
	return v1alpha1.CanaryStep{Replicas: intstr.FromInt32(replicas), Pause: pause, Analysis: checks}
}

var untilPromoted = &v1alpha1.CanaryPause{}

// A release seen and steered from the page: it advances live past a timed pause without a
// reload (with its pod-health values plotted), a promote clicked approves exactly one step, and
// an abort clicked rolls it back.
func TestReleaseFromThePage(t *testing.T) {
	e := setup(t)
	url := e.startDashboard()
	ctx := browser(t)

	// The list is open before the Canary exists: it appears there live, with its Deployments.
	run(t, ctx, "the empty list", chromedp.Navigate(url), visible(`#main section h2`),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))
	e.createCanary([]v1alpha1.AnalysisCheck{{Name: "health", Interval: &metav1.Duration{Duration: time.Second}, Count: ptr.To[int32](4),
		Provider: v1alpha1.AnalysisProvider{PodHealth: &v1alpha1.PodHealthProvider{MaxNotReady: 1}}}},
		step(1, &v1alpha1.CanaryPause{Duration: &metav1.Duration{Duration: 10 * time.Second}}, "health"),
		step(2, untilPromoted), step(3, untilPromoted))
	run(t, ctx, "the list of workloads",
		visible(`#workloads tr[data-kind="canary"][data-name="checkout"]`),
		visible(`#workloads tr[data-kind="deploy"][data-name="checkout-canary"]`))
	screenshot(t, ctx, "dashboard-list")

	// Follow the link to the release while it is at step 1. The document was marked before the
	// Canary existed: a reload would lose the mark.
	run(t, ctx, "the release at step 1",
		chromedp.Click(chromedp.CSS(`#workloads tr[data-kind="canary"][data-name="checkout"] a`)),
		visible(`#steps .step.current[data-index="1"]`))
	run(t, ctx, "the release to advance to step 2 by itself",
		visible(`#steps .step.current[data-index="2"][data-state="Paused"]`),
		poll(`+document.querySelector('[data-check="health"] svg').dataset.points >= 2`))
	if !get(t, ctx, "the mark", chromedp.Evaluate[bool](`window.notReloaded === true`)) {
		t.Fatal("the page was reloaded to show the Canary or its new step; it must follow the watch")
	}
	screenshot(t, ctx, "dashboard-release")

	confirm := click(t, ctx, "promote", "dashboard-confirm")
	if !strings.Contains(confirm, "batch 2 of 4 approved") || !strings.Contains(confirm, `"/spec/approvedBatch"`) {
		t.Errorf("the confirmation says %q; want what promote changes and the patch", confirm)
	}
	result(t, ctx, "canary/checkout promoted: batch 2 of 4 approved")
	c := e.waitCanary("the release to pause at step 3", func(c *v1alpha1.Canary) bool { return pausedAt(c, 3) })
	if c.Spec.ApprovedBatch != 2 || c.Status.Batches[3].State != v1alpha1.BatchPending {
		t.Errorf("after one promote: approvedBatch %d, step 4 %s; want 2 and Pending (exactly one step)", c.Spec.ApprovedBatch, c.Status.Batches[3].State)
	}
	run(t, ctx, "the page at step 3", visible(`#steps .step.current[data-index="3"][data-state="Paused"]`))

	click(t, ctx, "abort", "")
	result(t, ctx, "canary/checkout aborted: rolling back to the stable Deployment checkout")
	e.waitCanary("the rollback", func(c *v1alpha1.Canary) bool { return c.Status.Phase == v1alpha1.CanaryRolledBack })
	run(t, ctx, "the page to show the rollback", poll(`document.querySelector('#phase').textContent === 'RolledBack'`))
	stable, err := e.Kube.AppsV1().Deployments(e.NS).Get(e.Ctx, name, metav1.GetOptions{})
	if err != nil || *stable.Spec.Replicas != replicas {
		t.Errorf("after the abort the stable Deployment has %v replicas (%v); want %d", stable.Spec.Replicas, err, replicas)
	}
}

// What must change nothing: a request without the token (401), a POST without the token header
// (403), a read-only dashboard (buttons disabled, its API refusing), and a person whose RBAC
// cannot patch Canaries (the API server's refusal shown in the page).
func TestRefusalsChangeNothing(t *testing.T) {
	e := setup(t)
	e.createCanary(nil, step(1, untilPromoted))
	before := e.waitCanary("the release to pause at step 1", func(c *v1alpha1.Canary) bool { return pausedAt(c, 1) })
	unchanged := func(what string) {
		t.Helper()
		c := e.canary()
		if c.Generation != before.Generation || c.Spec.ApprovedBatch != 0 || c.Spec.Paused || c.Spec.Rollback {
			t.Errorf("%s changed the Canary: generation %d→%d, approvedBatch %d, paused %v, rollback %v",
				what, before.Generation, c.Generation, c.Spec.ApprovedBatch, c.Spec.Paused, c.Spec.Rollback)
		}
	}
	body := fmt.Sprintf(`{"action":"promote","kind":"canary","namespace":%q,"name":%q}`, e.NS, name)

	url := e.startDashboard()
	bare := url[:strings.LastIndex(url[:len(url)-1], "/")+1]
	for _, tc := range []struct {
		method, url, header string
		want                int
	}{
		{"GET", bare, "", http.StatusUnauthorized},
		{"GET", bare + "api/list", "", http.StatusUnauthorized},
		{"POST", bare + "api/action", "any", http.StatusUnauthorized},
		{"POST", url + "api/action", "", http.StatusForbidden},
	} {
		req, _ := http.NewRequestWithContext(e.Ctx, tc.method, tc.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tc.header != "" {
			req.Header.Set(dashboard.TokenHeader, tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s (header %q): %d, want %d", tc.method, tc.url, tc.header, resp.StatusCode, tc.want)
		}
	}
	unchanged("requests without the token")

	release := "#/release/canary/" + e.NS + "/" + name
	ctx := browser(t)
	roURL := e.startDashboard("--read-only")
	run(t, ctx, "the read-only dashboard", chromedp.Navigate(roURL+release),
		visible(`#readonly`), visible(`button[data-action="promote"][disabled]`))
	status := get(t, ctx, "a POST from the page", chromedp.Evaluate[int](fmt.Sprintf(`fetch('api/action', {method: 'POST', body: %q,
		headers: {'Content-Type': 'application/json', 'X-Workload-Token': location.pathname.split('/')[1]}}).then((r) => r.status)`, body),
		chromedp.EvalAwaitPromise))
	if status != http.StatusForbidden {
		t.Errorf("a POST to the read-only dashboard: %d, want 403", status)
	}
	unchanged("the read-only dashboard")

	viewer := e.viewer()
	vURL := e.startDashboard("--as", viewer)
	run(t, ctx, "the viewer's dashboard", chromedp.Navigate(vURL+release),
		visible(`#steps .step.current[data-index="1"][data-state="Paused"]`))
	click(t, ctx, "promote", "")
	result(t, ctx, "Refused (403)")
	result(t, ctx, "cannot patch resource \"canaries\"")
	screenshot(t, ctx, "dashboard-forbidden")
	unchanged("the viewer's promote")
}

// viewer makes a ServiceAccount that may read what the dashboard shows but change nothing, and
// returns the user name to impersonate it.
func (e *env) viewer() string {
	e.T.Helper()
	const sa = "viewer"
	e2eenv.Create(e.T, e.Ctx, e.Kube.CoreV1().ServiceAccounts(e.NS), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}})
	read := []string{"get", "list", "watch"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"canaries", "tapps", "uniteddeployments"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets", "controllerrevisions"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: read},
	}}
	e2eenv.Create(e.T, e.Ctx, e.Kube.RbacV1().Roles(e.NS), role)
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: e.NS}}}
	e2eenv.Create(e.T, e.Ctx, e.Kube.RbacV1().RoleBindings(e.NS), binding)
	return "system:serviceaccount:" + e.NS + ":" + sa
}
