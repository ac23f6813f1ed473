package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/agentproc"
)

// The writers' client names in the audit log (ClientName): Argo Rollouts' controller sets no
// User-Agent of its own, so client-go's default names it after the binary.
const (
	argoClient  = "rollouts-controller"
	agentClient = "workload-agent"
)

var rolloutGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"}

// BenchmarkVsArgoRollouts (issue 30): the same release of BENCH_REPLICAS pods in 4 steps (25%,
// 50%, 75%, then 100%) by Argo Rollouts' controller (hack/tools/argo-rollouts, built into the
// cache by hack/argo-rollouts/build.sh) and by the agent (as deployed: every controller), in
// turns on one control plane, both at the benchmark client budget (BENCH_QPS/BENCH_BURST). Argo
// runs its defaults (maxSurge 25%, maxUnavailable 25%), then maxUnavailable 0 (the capacity
// guarantee the Canary keeps), then maxUnavailable 0 with a pause at 25% ended by a full
// promotion; the agent releases a Canary in pair form, then the same with a pause at 25% and
// `kubectl workload promote --full`. Reported per release: the controller's CPU seconds, its
// own writes without Events (audit log), its peak RSS, the release time and the fewest
// available / most live pods; then the agent/Argo ratios of this run. With
// BENCH_BASELINE_AGENT_BIN (another build of the agent, e.g. of main) the agent's two releases
// are run again with it, and the ratios of this build to it are printed too.
func BenchmarkVsArgoRollouts(b *testing.B) {
	e := getEnv(b)
	dir := argoRolloutsDir(b)
	ctx := context.Background()
	if err := e.cluster.InstallCRDs(ctx, filepath.Join(dir, "crds")); err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(e.cluster.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	var figs []releaseFigures

	argo := e.startArgo(b, filepath.Join(dir, "rollouts-controller"))
	figs = append(figs, e.argoReleases(b, dyn, argo)...)
	argo.stop(b)

	agents := []struct{ label, bin string }{{"Agent", ""}}
	if base := os.Getenv("BENCH_BASELINE_AGENT_BIN"); base != "" {
		agents = append(agents, struct{ label, bin string }{"Baseline", base})
	}
	for _, a := range agents {
		agent := e.startAgentBinary(b, a.bin, "vs-argo-"+strings.ToLower(a.label))
		for _, full := range []bool{false, true} {
			figs = append(figs, e.agentRelease(b, agent.Pid(), a.label, full))
		}
		stopAgent(b, agent, "vs-argo-"+strings.ToLower(a.label))
	}

	byName := map[string]releaseFigures{}
	for _, f := range figs {
		byName[f.name] = f
	}
	compareReleases(byName["Agent/pair"], byName["Argo/maxUnavailable=0"], byName["Argo/default"])
	compareReleases(byName["Agent/promote-full"], byName["Argo/promote-full"], releaseFigures{})
	if len(agents) > 1 { // what this build's changes bought, in the same run
		compareReleases(byName["Agent/pair"], byName["Baseline/pair"], releaseFigures{})
		compareReleases(byName["Agent/promote-full"], byName["Baseline/promote-full"], releaseFigures{})
	}
}

// argoRolloutsDir builds Argo Rollouts' controller if it is missing (a cold build takes many
// minutes: `make argo-rollouts-bin` does it outside go test's timeout) and returns its directory.
func argoRolloutsDir(b *testing.B) string {
	b.Helper()
	if d := os.Getenv("ARGO_ROLLOUTS_DIR"); d != "" {
		return d
	}
	root, err := agentproc.ModuleRoot()
	if err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(root, "hack", "argo-rollouts", "build.sh")
	if out, err := exec.Command(script).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", script, err, out)
	}
	out, err := exec.Command(script, "--print-dir").Output()
	if err != nil {
		b.Fatalf("%s --print-dir: %v", script, err)
	}
	return strings.TrimSpace(string(out))
}

// argoProc is a running rollouts-controller.
type argoProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *argoProc) Pid() int { return p.cmd.Process.Pid }

// startArgo runs Argo Rollouts' controller over the whole cluster as its manifests deploy it
// (log level info), without leader election (one instance; a Lease would only add writes), and
// waits until its health endpoint answers.
func (e *env) startArgo(b *testing.B, bin string) *argoProc {
	b.Helper()
	ports := make([]int, 2)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	log, err := os.Create(filepath.Join(e.outDir, "argo-rollouts.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, "--kubeconfig="+e.cluster.Kubeconfig, "--leader-elect=false",
		fmt.Sprintf("--qps=%d", clientQPS), fmt.Sprintf("--burst=%d", clientBurst),
		fmt.Sprintf("--metricsPort=%d", ports[0]), fmt.Sprintf("--healthzPort=%d", ports[1]))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=kube-system")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &argoProc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	b.Cleanup(func() { p.stop(b) })
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1])
	poll(b, "Argo Rollouts' controller healthy", 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		select {
		case <-p.done:
			b.Fatalf("rollouts-controller exited; log in %s", log.Name())
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error(), nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	return p
}

func (p *argoProc) stop(b *testing.B) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.done
	}
}

// argoReleases runs Argo's three releases on one Rollout, each to a new image.
func (e *env) argoReleases(b *testing.B, dyn dynamic.Interface, argo *argoProc) []releaseFigures {
	b.Helper()
	const ns = "bench-vs-argo"
	e.deleteNamespace(b, ns)
	e.ensureNamespace(b, ns)
	defer e.deleteNamespace(b, ns)
	ctx := context.Background()
	ro := dyn.Resource(rolloutGVR).Namespace(ns)
	obj := &unstructured.Unstructured{Object: newRollout("release", replicas, "registry.invalid/app:v1")}
	if _, err := ro.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	poll(b, "the Rollout healthy at v1", time.Second, e.rolloutDone(ro, "release"))

	patch := func(what, p string) {
		if _, err := ro.Patch(ctx, "release", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			b.Fatalf("%s: %v", what, err)
		}
	}
	image := func(v string) func(context.Context) error {
		return func(context.Context) error {
			patch("image "+v, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"registry.invalid/app:%s"}]}}}}`, v))
			return nil
		}
	}
	var out []releaseFigures
	out = append(out, e.measureRelease(b, releaseRun{name: "Argo/default", client: argoClient, pid: argo.Pid(), ns: ns,
		image: "registry.invalid/app:v2", start: image("v2"), done: e.rolloutDone(ro, "release")}))

	patch("maxUnavailable 0", `{"spec":{"strategy":{"canary":{"maxUnavailable":0}}}}`)
	poll(b, "the strategy change observed", 200*time.Millisecond, e.rolloutDone(ro, "release"))
	out = append(out, e.measureRelease(b, releaseRun{name: "Argo/maxUnavailable=0", client: argoClient, pid: argo.Pid(), ns: ns,
		image: "registry.invalid/app:v3", start: image("v3"), done: e.rolloutDone(ro, "release")}))

	patch("a pause at 25%", `{"spec":{"strategy":{"canary":{"steps":[{"setWeight":25},{"pause":{}},{"setWeight":50},{"setWeight":75}]}}}}`)
	poll(b, "the steps change observed", 200*time.Millisecond, e.rolloutDone(ro, "release"))
	out = append(out, e.measureRelease(b, releaseRun{name: "Argo/promote-full", client: argoClient, pid: argo.Pid(), ns: ns,
		image: "registry.invalid/app:v4", start: image("v4"), done: e.rolloutDone(ro, "release"),
		paused: func(ctx context.Context) (bool, error) {
			u, err := ro.Get(ctx, "release", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "pauseConditions")
			return len(conds) > 0, nil
		},
		// What `kubectl argo rollouts promote --full` sends to a Rollout that spec.paused does
		// not hold.
		promote: func(ctx context.Context) error {
			_, err := ro.Patch(ctx, "release", types.MergePatchType, []byte(`{"status":{"promoteFull":true}}`), metav1.PatchOptions{}, "status")
			return err
		}}))
	return out
}

// newRollout is a Rollout of n pods of the benchmarks' pod template released in 4 steps
// (25%, 50%, 75%, then 100%) with Argo's default maxSurge and maxUnavailable (25% each).
func newRollout(name string, n int, image string) map[string]any {
	tmpl, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(ptrTo(podTemplate(name, image)))
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": int64(n),
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": tmpl,
			"strategy": map[string]any{"canary": map[string]any{"steps": []any{
				map[string]any{"setWeight": int64(25)}, map[string]any{"setWeight": int64(50)}, map[string]any{"setWeight": int64(75)},
			}}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// rolloutDone reports whether Argo says the Rollout's current template is released: Healthy,
// the stable ReplicaSet the current one, its spec observed, every replica updated and available.
func (e *env) rolloutDone(ro dynamic.ResourceInterface, name string) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		u, err := ro.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := func(f ...string) string {
			v, _, _ := unstructured.NestedFieldNoCopy(u.Object, append([]string{"status"}, f...)...)
			return fmt.Sprint(v)
		}
		want := strconv.Itoa(replicas)
		state := fmt.Sprintf("phase %s, generation %d observed %s, stableRS %s current %s, updated %s available %s",
			s("phase"), u.GetGeneration(), s("observedGeneration"), s("stableRS"), s("currentPodHash"), s("updatedReplicas"), s("availableReplicas"))
		done := s("phase") == "Healthy" && s("observedGeneration") == strconv.FormatInt(u.GetGeneration(), 10) &&
			s("stableRS") == s("currentPodHash") && s("updatedReplicas") == want && s("availableReplicas") == want
		return done, state, nil
	}
}

// agentRelease releases a Canary in pair form from a stable Deployment of BENCH_REPLICAS pods,
// in a namespace of its own; with full, the release pauses at 25% and is promoted with
// `kubectl workload promote --full`, as a person would.
func (e *env) agentRelease(b *testing.B, pid int, label string, full bool) releaseFigures {
	b.Helper()
	ns, name := "bench-vs-"+strings.ToLower(label), label+"/pair"
	if full {
		ns, name = ns+"-full", label+"/promote-full"
	}
	e.deleteNamespace(b, ns)
	e.ensureNamespace(b, ns)
	defer e.deleteNamespace(b, ns)
	ctx := context.Background()
	if _, err := e.kube.AppsV1().Deployments(ns).Create(ctx, newDeployment("stable", replicas, imageV1), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	poll(b, "the stable Deployment complete", time.Second, e.deploymentComplete(ns, "stable", replicas))
	c := newCanaryRelease()
	run := releaseRun{name: name, client: agentClient, pid: pid, ns: ns, image: imageV2,
		start: func(ctx context.Context) error {
			_, err := e.apps.AppsV1alpha1().Canaries(ns).Create(ctx, c, metav1.CreateOptions{})
			return err
		},
		done: e.canaryDone(ns, "release")}
	if full {
		c.Spec.Steps[0].Pause = &appsv1alpha1.CanaryPause{}
		run.paused = func(ctx context.Context) (bool, error) {
			got, err := e.apps.AppsV1alpha1().Canaries(ns).Get(ctx, "release", metav1.GetOptions{})
			return err == nil && got.Status.Phase == appsv1alpha1.CanaryPaused, err
		}
		run.promote = func(ctx context.Context) error {
			out, err := exec.CommandContext(ctx, pluginBinary(b), "promote", "canary/release", "--full",
				"-n", ns, "--kubeconfig="+e.cluster.Kubeconfig).CombinedOutput()
			if err != nil {
				return fmt.Errorf("promote --full: %v: %s", err, out)
			}
			return nil
		}
	}
	return e.measureRelease(b, run)
}

// canaryDone reports whether the Canary says Completed for its current spec.
func (e *env) canaryDone(ns, name string) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		c, err := e.apps.AppsV1alpha1().Canaries(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		state := fmt.Sprintf("phase %s, generation %d observed %d: %s", c.Status.Phase, c.Generation, c.Status.ObservedGeneration, c.Status.Message)
		return c.Status.Phase == appsv1alpha1.CanaryCompleted && c.Status.ObservedGeneration == c.Generation, state, nil
	}
}
