package analysis

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/config"
	agentrbac "github.com/kubectl-workload/kubectl-workload/config/agent"
	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
)

const agentServiceAccount = "workload-agent"

var installRBACOnce sync.Once

// installAgentRBAC applies config/agent but its Deployment (the agent runs here as a process),
// once for the package's cluster: the agent's ServiceAccount, ClusterRole and bindings, as
// `kubectl workload install` does.
func installAgentRBAC(t *testing.T, e *e2eenv.Env) {
	t.Helper()
	installRBACOnce.Do(func() {
		objs, err := config.AgentManifests()
		if err != nil {
			t.Fatal(err)
		}
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Kube.Discovery()))
		for _, o := range objs {
			if o.GetKind() == "Deployment" {
				continue
			}
			gvk := o.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("%s: %v", gvk, err)
			}
			ri := e.Dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			if _, err := ri.Create(e.Ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	})
}

// agentKubeconfig is a kubeconfig with a token of the agent's ServiceAccount (TokenRequest), as
// the agent's pod gets: the agent may do what config/agent grants, and what a test's Role adds.
func agentKubeconfig(t *testing.T, e *e2eenv.Env) string {
	t.Helper()
	tr, err := e.Kube.CoreV1().ServiceAccounts(agentrbac.Namespace).CreateToken(e.Ctx, agentServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: e.Cluster.Server, CertificateAuthorityData: e.Cluster.CAData}
	cfg.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["agent"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "agent"}
	cfg.CurrentContext = "agent"
	path := filepath.Join(t.TempDir(), "agent.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// release is one namespace with a stable Deployment of 2 pods, the Prometheus token in Secret
// prom-token (and another Secret beside it), and a Role that lets the agent get prom-token and
// nothing else, as docs/analysis.md tells.
type release struct {
	*e2eenv.Env
	args []v1alpha1.AnalysisArgValue
}

func newRelease(t *testing.T, token string, args map[string]string) *release {
	t.Helper()
	r := &release{Env: e2eenv.Setup(t)}
	labels := map[string]string{"app": "checkout", "track": "stable"}
	e2eenv.Create(t, r.Ctx, r.Kube.AppsV1().Deployments(r.NS), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: checkoutPods(labels, "nginx:1.26")}})
	for name, value := range map[string]string{"prom-token": token, "other": "not for the agent"} {
		e2eenv.Create(t, r.Ctx, r.Kube.CoreV1().Secrets(r.NS), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"token": []byte(value)}})
	}
	e2eenv.Create(t, r.Ctx, r.Kube.RbacV1().Roles(r.NS), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-agent-check-secrets"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"prom-token"}, Verbs: []string{"get"}}}})
	e2eenv.Create(t, r.Ctx, r.Kube.RbacV1().RoleBindings(r.NS), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-agent-check-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "workload-agent-check-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: agentServiceAccount, Namespace: agentrbac.Namespace}}})
	for k, v := range args {
		r.args = append(r.args, v1alpha1.AnalysisArgValue{Name: k, Value: ptr.To(v)})
	}
	return r
}

func checkoutPods(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "checkout", Image: image}}}}
}

// start releases nginx 1.27 to both pods in one step that runs every check of the template.
func (r *release) start(t *testing.T, template string) {
	t.Helper()
	r.create(t, func(s *v1alpha1.CanarySpec) {
		s.Analysis = []v1alpha1.AnalysisCheck{{Name: "slo", Args: r.args,
			TemplateRef: &v1alpha1.AnalysisTemplateRef{Kind: v1alpha1.KindClusterAnalysisTemplate, Name: template}}}
		s.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(2), Analysis: []string{"slo"}}}
	})
}

// create creates the Canary that releases nginx 1.27 on checkout-canary, its analysis and steps
// set by edit.
func (r *release) create(t *testing.T, edit func(*v1alpha1.CanarySpec)) {
	t.Helper()
	c := &v1alpha1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout"},
		Spec: v1alpha1.CanarySpec{
			Replicas:  2,
			StableRef: v1alpha1.StableRef{Name: "checkout"},
			Canary: v1alpha1.CanaryTarget{Name: "checkout-canary",
				Template: checkoutPods(map[string]string{"app": "checkout", "track": "canary"}, "nginx:1.27")},
		}}
	edit(&c.Spec)
	e2eenv.Create(t, r.Ctx, r.Apps.AppsV1alpha1().Canaries(r.NS), c)
}

// wait waits until the release is in phase and returns it.
func (r *release) wait(t *testing.T, phase v1alpha1.CanaryPhase) *v1alpha1.Canary {
	t.Helper()
	return r.waitFor(t, "phase "+string(phase), func(c *v1alpha1.Canary) bool { return c.Status.Phase == phase })
}

// waitFor waits until cond holds for the Canary, as of its latest generation.
func (r *release) waitFor(t *testing.T, what string, cond func(*v1alpha1.Canary) bool) *v1alpha1.Canary {
	t.Helper()
	var c *v1alpha1.Canary
	e2eenv.WaitFor(t, r.Ctx, r.NS+": "+what, func(ctx context.Context) (bool, string, error) {
		var err error
		c, err = r.Apps.AppsV1alpha1().Canaries(r.NS).Get(ctx, "checkout", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return c.Status.ObservedGeneration == c.Generation && cond(c),
			fmt.Sprintf("phase %s: %s; abort %+v; analysis %+v; background %+v", c.Status.Phase, c.Status.Message,
				c.Status.Abort, c.Status.Analysis, c.Status.BackgroundAnalysis), nil
	})
	return c
}

// One ClusterAnalysisTemplate with arguments, through the agent running as its ServiceAccount:
// its Prometheus check reaches the real Prometheus behind an authenticating proxy with the token
// of a Secret of each Canary's namespace (which a Role with resourceNames lets the agent get,
// and no other Secret), its web check a test server. Three Canaries of three namespaces release
// at the same time: under a loose limit with a healthy web answer the release completes; under
// a tight limit the Prometheus check rolls it back; with the web server saying "breached" the
// web check rolls it back.
func TestClusterTemplateThroughTheAgent(t *testing.T) {
	_, prom := startApp(t, 0.1)
	address := authProxy(t, prom.URL, "s3cret")
	verdicts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/release/bad" {
			_, _ = w.Write([]byte(`{"status": "breached"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status": "ok"}`))
	}))
	t.Cleanup(verdicts.Close)

	admin := e2eenv.Clients(t)
	installAgentRBAC(t, admin)
	passes := newRelease(t, "s3cret", map[string]string{"max": "0.5", "verdict": "good"})
	promFails := newRelease(t, "s3cret", map[string]string{"max": "0.05", "verdict": "good"})
	webFails := newRelease(t, "s3cret", map[string]string{"max": "0.5", "verdict": "bad"})

	name := "slo-" + passes.NS
	tenant := "shop"
	every := &metav1.Duration{Duration: time.Second}
	createTemplate(t, admin, &v1alpha1.ClusterAnalysisTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.AnalysisTemplateSpec{
			Args: []v1alpha1.AnalysisArg{{Name: "max"}, {Name: "verdict"}},
			Checks: []v1alpha1.AnalysisCheck{
				{Name: "error-rate", Interval: every, Count: ptr.To[int32](3),
					SuccessCondition: "result.size() == 1 && result[0] < {{args.max}}",
					FailureCondition: "result.size() == 1 && result[0] >= {{args.max}}",
					Provider: v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: address, Query: errorRatio,
						Headers: []v1alpha1.WebHeader{{Name: "X-Scope-OrgID", Value: &tenant}},
						Auth: &v1alpha1.PrometheusAuth{BearerToken: &v1alpha1.SecretValueSource{
							SecretKeyRef: v1alpha1.SecretKeyRef{Name: "prom-token", Key: "token"}}}}}},
				{Name: "web", Interval: every, Count: ptr.To[int32](3),
					SuccessCondition: `result.status == "ok"`, FailureCondition: `result.status == "breached"`,
					Provider: v1alpha1.AnalysisProvider{Web: &v1alpha1.WebProvider{URL: verdicts.URL + "/release/{{args.verdict}}"}}},
			},
		},
	})

	kubeconfig := agentKubeconfig(t, admin)
	checkSecretAccess(t, admin, kubeconfig, passes.NS)
	agent := admin.RunAgent(agentproc.Options{Kubeconfig: kubeconfig, Args: []string{"--controllers=canary", "--leader-elect=false"}})
	t.Cleanup(func() { e2eenv.CheckAgentLog(t, agent) })

	for _, r := range []*release{passes, promFails, webFails} {
		r.start(t, name)
	}
	c := passes.wait(t, v1alpha1.CanaryCompleted)
	if a := c.Status.Analysis; len(a) != 2 || a[0].Phase != v1alpha1.AnalysisSuccessful || a[1].Phase != v1alpha1.AnalysisSuccessful ||
		a[0].Template != "ClusterAnalysisTemplate/"+name {
		t.Errorf("%s: analysis %+v, want slo.error-rate and slo.web Successful from the template", passes.NS, a)
	}
	for _, tc := range []struct {
		r     *release
		check string
	}{{promFails, "slo.error-rate"}, {webFails, "slo.web"}} {
		c := tc.r.wait(t, v1alpha1.CanaryRolledBack)
		if a := c.Status.Abort; a == nil || a.Reason != v1alpha1.ReasonAnalysisFailed || a.Check != tc.check {
			t.Errorf("%s: abort %+v, want %s failed", tc.r.NS, a, tc.check)
		}
	}
}

// checkSecretAccess proves the Role's reach before the agent runs: with the agent's
// credentials, the Secret its check names can be read, the one beside it cannot.
func checkSecretAccess(t *testing.T, e *e2eenv.Env, kubeconfig, ns string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Get(e.Ctx, "prom-token", metav1.GetOptions{}); err != nil {
		t.Errorf("the agent cannot get the Secret its check names: %v", err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Get(e.Ctx, "other", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent's get of another Secret: %v, want Forbidden", err)
	}
	if _, err := kube.CoreV1().Secrets(ns).List(e.Ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent's list of Secrets: %v, want Forbidden", err)
	}
}

// A background check fails the release while no step check runs: the release waits for a
// promote after step 1 of 2 (its steps have no check of their own), the error rate the real
// Prometheus measures goes from 1% to 50%, and the agent rolls the release back by itself,
// without a promote.
func TestBackgroundCheckFailsAReleaseWaitingBetweenSteps(t *testing.T) {
	exp, prom := startApp(t, 0.01)
	r := newRelease(t, "unused", nil)
	r.StartAgent("canary")
	r.create(t, func(s *v1alpha1.CanarySpec) {
		s.Analysis = []v1alpha1.AnalysisCheck{{Name: "error-rate", Interval: &metav1.Duration{Duration: time.Second},
			SuccessCondition: "result.size() == 1 && result[0] < 0.05", FailureCondition: "result.size() == 1 && result[0] >= 0.05",
			Provider: v1alpha1.AnalysisProvider{Prometheus: &v1alpha1.PrometheusProvider{Address: prom.URL, Query: errorRatio}}}}
		s.BackgroundAnalysis = &v1alpha1.CanaryBackgroundAnalysis{Analysis: []string{"error-rate"}}
		s.Steps = []v1alpha1.CanaryStep{{Replicas: intstr.FromInt32(1), Pause: &v1alpha1.CanaryPause{}}, {Replicas: intstr.FromInt32(2)}}
	})
	r.waitFor(t, "paused after step 1 with the background check passing", func(c *v1alpha1.Canary) bool {
		bg := c.Status.BackgroundAnalysis
		return c.Status.Phase == v1alpha1.CanaryPaused && c.Status.CurrentBatch == 1 && len(bg) == 1 && bg[0].Successful > 0
	})
	exp.SetErrorRate(t, 0.5)
	c := r.wait(t, v1alpha1.CanaryRolledBack)
	if a := c.Status.Abort; a == nil || a.Check != "error-rate" || !strings.Contains(a.Message, "background check error-rate failed at step 1/2") {
		t.Errorf("abort %+v, want the background check error-rate failed at step 1/2", a)
	}
	if c.Spec.ApprovedBatch != 0 {
		t.Errorf("approvedBatch %d: the release was promoted", c.Spec.ApprovedBatch)
	}
}
