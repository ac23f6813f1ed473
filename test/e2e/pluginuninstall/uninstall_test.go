package pluginuninstall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/e2eenv"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
)

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// install puts the CRDs and the agent's manifests in with the plugin; uninstall --force, with a
// Canary in the middle of its release (held at its first batch, carrying the agent's finalizer)
// and a TApp:
//   - while the agent is down, deletes the workloads, waits --timeout for them to go, and stops
//     with an error naming the Canary held by its finalizer, having deleted neither the agent's
//     manifests nor the CRDs (a CRD deleted then would hang on the Canary for ever);
//   - with the agent back, finds the Canary being deleted, waits until the agent has released
//     it, and then removes the agent and the CRDs, which go at once; the canary Deployment is
//     kept with its pods (no longer owned by the Canary), as is the stable one.
func TestUninstallForceLetsTheAgentReleaseCanaries(t *testing.T) {
	e := e2eenv.Clients(t)
	c, ctx, kube, apps, dyn := e.Cluster, e.Ctx, e.Kube, e.Apps, e.Dyn
	var err error
	run := pluginexec.New(t, ctx, c.Kubeconfig, "")
	eventually := func(what string, cond func(context.Context) (bool, string)) {
		t.Helper()
		e2eenv.WaitFor(t, ctx, what, func(ctx context.Context) (bool, string, error) {
			ok, state := cond(ctx)
			return ok, state, nil
		})
	}

	if r := run.Run("install"); r.Code != 0 || !strings.Contains(r.Out, "customresourcedefinition.apiextensions.k8s.io/canaries.apps.workload.dev serverside-applied") {
		t.Fatalf("install: exit %d", r.Code)
	}
	// install returns only once the API server serves every CRD: the kinds work at once.
	if _, err := apps.AppsV1alpha1().Canaries("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("Canaries not served right after install: %v", err)
	}
	if _, err := apps.AppsV1alpha1().TApps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("TApps not served right after install: %v", err)
	}
	if _, err := apps.AppsV1alpha1().UnitedDeployments("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("UnitedDeployments not served right after install: %v", err)
	}
	for _, ns := range []string{"shop", "games"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stableLabels := map[string]string{"app": "checkout", "track": "stable"}
	stable := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout"}}
	stable.Spec.Replicas = ptr.To[int32](3)
	stable.Spec.Selector = &metav1.LabelSelector{MatchLabels: stableLabels}
	stable.Spec.Template = podTemplate(stableLabels, "nginx:1.26")
	if _, err := kube.AppsV1().Deployments("shop").Create(ctx, stable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("3 available stable pods", func(ctx context.Context) (bool, string) {
		d, err := kube.AppsV1().Deployments("shop").Get(ctx, "checkout", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 3, fmt.Sprintf("%+v", d.Status)
	})
	// The agent runs as a process here, in every namespace; install's Deployment of it runs
	// kwok's idea of a pod.
	startAgent := func() *agentproc.Agent {
		return e.RunAgent(agentproc.Options{Kubeconfig: c.Kubeconfig, Args: []string{"--leader-elect=false"}})
	}
	agent := startAgent()

	canary := &v1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "checkout"}}
	canary.Spec.Replicas = 3
	canary.Spec.StableRef.Name = "checkout"
	canary.Spec.Canary.Name = "checkout-canary"
	canary.Spec.Canary.Template = podTemplate(map[string]string{"app": "checkout", "track": "canary"}, "nginx:1.27")
	canary.Spec.Batches = ptr.To[int32](3)
	canary.Spec.PauseType = v1alpha1.PauseFirst
	if canary, err = apps.AppsV1alpha1().Canaries("shop").Create(ctx, canary, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tappLabels := map[string]string{"app": "web"}
	tapp := &v1alpha1.TApp{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	tapp.Spec.Replicas = ptr.To[int32](2)
	tapp.Spec.Selector = &metav1.LabelSelector{MatchLabels: tappLabels}
	tapp.Spec.Template = podTemplate(tappLabels, "nginx:1.27")
	if _, err := apps.AppsV1alpha1().TApps("games").Create(ctx, tapp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	canaryDeployment := func(ctx context.Context) (*appsv1.Deployment, error) {
		return kube.AppsV1().Deployments("shop").Get(ctx, "checkout-canary", metav1.GetOptions{})
	}
	ownedByCanary := func(d *appsv1.Deployment) bool {
		return slices.ContainsFunc(d.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == canary.UID })
	}
	eventually("the Canary paused at batch 1, with the finalizer, and the TApp's 2 pods ready", func(ctx context.Context) (bool, string) {
		got, err := apps.AppsV1alpha1().Canaries("shop").Get(ctx, "checkout", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d, err := canaryDeployment(ctx)
		if err != nil {
			return false, err.Error()
		}
		ta, err := apps.AppsV1alpha1().TApps("games").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == v1alpha1.CanaryPaused && slices.Contains(got.Finalizers, v1alpha1.FinalizerOrphanCanary) &&
				ownedByCanary(d) && d.Status.AvailableReplicas == 1 && ta.Status.ReadyReplicas == 2,
			fmt.Sprintf("canary %s %q, canary Deployment %d available, TApp %d ready", got.Status.Phase, got.Finalizers, d.Status.AvailableReplicas, ta.Status.ReadyReplicas)
	})

	if r := run.Run("uninstall"); r.Code != 1 || !strings.Contains(r.Err, "refusing to delete the CRDs while workloads exist") {
		t.Fatalf("uninstall with workloads: exit %d, want 1 and a refusal", r.Code)
	}

	// The agent is down: the Canary is held by its finalizer; uninstall stops there.
	if err := agent.Stop(); err != nil {
		t.Fatal(err)
	}
	r := run.Run("uninstall", "--force", "--timeout=5s")
	if r.Code != 1 || strings.Count(strings.TrimSpace(r.Err), "\n") > 0 ||
		!strings.Contains(r.Err, "timed out after 5s waiting for the workloads to be gone: canary shop/checkout (finalizer "+v1alpha1.FinalizerOrphanCanary+") left; the agent, the CRDs and everything else were not deleted") {
		t.Fatalf("uninstall --force with the agent down: exit %d, want 1 and one line naming the held Canary", r.Code)
	}
	for _, want := range []string{"ud shop/", "canary shop/checkout deleted\n", "tapp games/web deleted\n"} {
		if want == "ud shop/" {
			if strings.Contains(r.Out, want) {
				t.Errorf("uninstall --force deleted a UnitedDeployment there was none of")
			}
			continue
		}
		if !strings.Contains(r.Out, want) {
			t.Errorf("uninstall --force did not print %q", want)
		}
	}
	for _, crd := range []string{"canaries.apps.workload.dev", "tapps.apps.workload.dev", "uniteddeployments.apps.workload.dev"} {
		got, err := dyn.Resource(crds).Get(ctx, crd, metav1.GetOptions{})
		if err != nil || got.GetDeletionTimestamp() != nil {
			t.Fatalf("CRD %s after an uninstall that timed out: %v, deleting %v", crd, err, err == nil && got.GetDeletionTimestamp() != nil)
		}
	}
	if _, err := kube.AppsV1().Deployments("workload-system").Get(ctx, "workload-agent", metav1.GetOptions{}); err != nil {
		t.Fatalf("the agent's Deployment after an uninstall that timed out: %v", err)
	}
	held, err := apps.AppsV1alpha1().Canaries("shop").Get(ctx, "checkout", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil {
		t.Fatalf("the Canary is not held, deleted, by its finalizer: %v", err)
	}
	if d, err := canaryDeployment(ctx); err != nil || !ownedByCanary(d) {
		t.Fatalf("the canary Deployment while its Canary is held: %v", err)
	}

	// uninstall --force again, the agent still down: it finds the Canary being deleted and waits;
	// the agent comes back and releases the Canary; uninstall goes on to the end.
	follow := run.Start("uninstall", "--force", "--timeout=2m")
	eventually("uninstall --force to wait", func(context.Context) (bool, string) {
		lines := follow.Lines()
		return slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "waiting up to 2m0s for the workloads to be gone") }),
			strings.Join(lines, " | ")
	})
	startAgent()
	code, stderr := follow.Wait(t, e2eenv.Safety)
	out := strings.Join(follow.Lines(), "\n")
	if code != 0 || stderr != "" {
		t.Fatalf("uninstall --force once the agent is back: exit %d, stderr %q", code, stderr)
	}
	want := []string{
		"canary shop/checkout is being deleted",
		"waiting up to 2m0s for the workloads to be gone (the workload-agent releases each Canary once it has kept its canary Deployment)",
		"every TApp, UnitedDeployment and Canary is gone",
		"deployment.apps/workload-agent deleted",
		"namespace/workload-system deleted",
		"customresourcedefinition.apiextensions.k8s.io/canaries.apps.workload.dev deleted",
	}
	at := -1
	for _, w := range want {
		i := slices.Index(follow.Lines(), w)
		if i <= at {
			t.Fatalf("uninstall --force printed %q out of place (or not at all); want, in this order:\n%s\ngot:\n%s", w, strings.Join(want, "\n"), out)
		}
		at = i
	}
	eventually("the CRDs to be gone", func(ctx context.Context) (bool, string) {
		var left []string
		for _, crd := range []string{"canaries.apps.workload.dev", "tapps.apps.workload.dev", "uniteddeployments.apps.workload.dev"} {
			if _, err := dyn.Resource(crds).Get(ctx, crd, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, crd)
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	d, err := canaryDeployment(ctx)
	if err != nil {
		t.Fatalf("the canary Deployment was not kept: %v", err)
	}
	if ownedByCanary(d) || *d.Spec.Replicas != 1 {
		t.Fatalf("the canary Deployment kept: owner references %+v, replicas %d; want no Canary owner and 1 replica", d.OwnerReferences, *d.Spec.Replicas)
	}
	// The garbage collector has had time to act on an owner that is gone: the canary pods stay.
	time.Sleep(2 * time.Second)
	if d, err := canaryDeployment(ctx); err != nil || d.DeletionTimestamp != nil || d.Status.AvailableReplicas != 1 {
		t.Fatalf("the canary Deployment after the CRDs went: %v", err)
	}
	if s, err := kube.AppsV1().Deployments("shop").Get(ctx, "checkout", metav1.GetOptions{}); err != nil || s.DeletionTimestamp != nil {
		t.Fatalf("the stable Deployment: %v", err)
	}
}

func podTemplate(labels map[string]string, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "main", Image: image}},
		},
	}
}
