package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/e2e/pluginexec"
)

// The benchmarks run in this order on one control plane (go test runs them in source order).
// Each makes its own preconditions, so that -bench can select any of them, but comparisons
// need both sides in the same run.

const (
	imageV1 = "registry.invalid/app:v1"
	imageV2 = "registry.invalid/app:v2"

	deployNS = "bench-deploy"
	tappNS   = "bench-tapp" // also holds the unrelated pods of BenchmarkBusyNamespace
	udNS     = "bench-ud"
	// controlNS holds a second TApp like the one of tappNS, without unrelated pods around it.
	controlNS = "bench-control"
	appName   = "app"
)

func readyOn(image string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return podReady(p) && runsImage(p, image) }
}

// BenchmarkDeployment: the native baseline. kube-controller-manager (client QPS and burst as the
// agent's) scales a Deployment from 0 to BENCH_REPLICAS Ready pods, then rolls it to a new image
// (default strategy: maxSurge 25%, maxUnavailable 25%; every pod is re-created).
func BenchmarkDeployment(b *testing.B) {
	e := getEnv(b)
	e.deleteNamespace(b, deployNS) // left by an interrupted run
	e.ensureNamespace(b, deployNS)
	sel := "app=" + appName
	ok := b.Run("ScaleOut", func(b *testing.B) {
		e.measure(b, phase{
			name: "Deployment/ScaleOut", ns: deployNS, selector: sel, pods: replicas,
			isDone: readyOn(imageV1),
			action: func(ctx context.Context) error {
				_, err := e.kube.AppsV1().Deployments(deployNS).Create(ctx, newDeployment(appName, replicas, imageV1), metav1.CreateOptions{})
				return err
			},
			complete:   e.deploymentComplete(deployNS, appName, replicas),
			controller: "kube-controller-manager",
			ideal:      1,
		})
	})
	if ok {
		b.Run("RollingUpdate", func(b *testing.B) {
			e.measure(b, phase{
				name: "Deployment/RollingUpdate", ns: deployNS, selector: sel, pods: replicas,
				isDone: readyOn(imageV2),
				action: func(ctx context.Context) error {
					patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":%q}]}}}}`, imageV2)
					_, err := e.kube.AppsV1().Deployments(deployNS).Patch(ctx, appName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
					return err
				},
				complete:   e.deploymentComplete(deployNS, appName, replicas),
				controller: "kube-controller-manager",
				ideal:      2,
			})
		})
	}
	e.deleteNamespace(b, deployNS)
}

// BenchmarkTApp: the agent (same client QPS and burst as kube-controller-manager) scales a TApp
// from 0 to BENCH_REPLICAS Ready instances, updates every instance's image in place, then changes
// its env, which re-creates every pod. Both updates run with maxUnavailable 25%, a Deployment's
// default. The TApp is left running for BenchmarkBusyNamespace.
func BenchmarkTApp(b *testing.B) {
	e := getEnv(b)
	e.deleteNamespace(b, tappNS)
	e.ensureNamespace(b, tappNS)
	a := e.startAgent(b, "tapp")
	sel := appsv1alpha1.LabelTAppName + "=" + appName
	tapps := e.apps.AppsV1alpha1().TApps(tappNS)
	update := func(ctx context.Context, mutate func(*appsv1alpha1.TApp)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			t, err := tapps.Get(ctx, appName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(t)
			_, err = tapps.Update(ctx, t, metav1.UpdateOptions{})
			return err
		})
	}
	ok := b.Run("ScaleOut", func(b *testing.B) {
		e.measure(b, phase{
			name: "TApp/ScaleOut", ns: tappNS, selector: sel, pods: replicas,
			isDone: readyOn(imageV1),
			action: func(ctx context.Context) error {
				t := newTApp(appName, replicas, imageV1)
				t.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("25%"))
				_, err := tapps.Create(ctx, t, metav1.CreateOptions{})
				return err
			},
			complete:   e.tappComplete(tappNS, appName, replicas),
			controller: "workload-agent",
			agent:      a,
			ideal:      1,
		})
	})
	ok = ok && b.Run("InPlaceUpdate", func(b *testing.B) {
		e.measure(b, phase{
			name: "TApp/InPlaceUpdate", ns: tappNS, selector: sel, pods: replicas,
			isDone: readyOn(imageV2),
			action: func(ctx context.Context) error {
				return update(ctx, func(t *appsv1alpha1.TApp) { t.Spec.Template.Spec.Containers[0].Image = imageV2 })
			},
			complete:   e.tappComplete(tappNS, appName, replicas),
			controller: "workload-agent",
			agent:      a,
			ideal:      1,
		})
	})
	if ok {
		b.Run("RecreateUpdate", func(b *testing.B) {
			e.measure(b, phase{
				name: "TApp/RecreateUpdate", ns: tappNS, selector: sel, pods: replicas,
				isDone: func(p *corev1.Pod) bool { return readyOn(imageV2)(p) && hasEnv(p, "VERSION", "3") },
				action: func(ctx context.Context) error {
					return update(ctx, func(t *appsv1alpha1.TApp) {
						t.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "3"}}
					})
				},
				complete:   e.tappComplete(tappNS, appName, replicas),
				controller: "workload-agent",
				agent:      a,
				ideal:      2,
			})
		})
	}
	stopAgent(b, a, "tapp")
	compareTAppWithDeployment()
}

func compareTAppWithDeployment() {
	d, t := results["Deployment/ScaleOut"], results["TApp/ScaleOut"]
	if d == nil || t == nil {
		return
	}
	fmt.Printf("\n--- TApp vs Deployment, same control plane, same client QPS/burst (%d/%d)\n", clientQPS, clientBurst)
	meets := t.ready <= d.ready
	compare("scale-out time to every pod Ready, TApp/Deployment", "TApp", "Deployment", t.ready.Seconds(), d.ready.Seconds(), "<= 1", &meets)
	compare("scale-out time to status complete, TApp/Deployment", "TApp", "Deployment", t.complete.Seconds(), d.complete.Seconds(), "", nil)
	compare("controller pod writes per pod at scale-out, TApp/Deployment", "TApp", "Deployment",
		t.perPod(t.controllerPodWrites().Total()), d.perPod(d.controllerPodWrites().Total()), "", nil)
	compare("all pod writes per pod at scale-out, TApp/Deployment", "TApp", "Deployment",
		t.perPod(t.podWrites().Total()), d.perPod(d.podWrites().Total()), "", nil)
	du := results["Deployment/RollingUpdate"]
	for _, name := range []string{"TApp/InPlaceUpdate", "TApp/RecreateUpdate"} {
		if u := results[name]; u != nil && du != nil {
			compare("update time, "+name+"/Deployment rolling update", name, "Deployment/RollingUpdate", u.ready.Seconds(), du.ready.Seconds(), "", nil)
			compare("controller pod writes per pod, "+name+"/Deployment rolling update", name, "Deployment/RollingUpdate",
				u.perPod(u.controllerPodWrites().Total()), du.perPod(du.controllerPodWrites().Total()), "", nil)
		}
	}
}

// BenchmarkUnitedDeployment: a UnitedDeployment of 3 TApp subsets (one per zone) of
// BENCH_UD_SUBSET instances each, from nothing to every pod Ready.
func BenchmarkUnitedDeployment(b *testing.B) {
	e := getEnv(b)
	e.deleteNamespace(b, udNS)
	e.ensureNamespace(b, udNS)
	a := e.startAgent(b, "uniteddeployment")
	n := udSubset * len(zones)
	b.Run("ScaleOut", func(b *testing.B) {
		e.measure(b, phase{
			name: "UnitedDeployment/ScaleOut", ns: udNS, selector: "app=" + appName, pods: n,
			isDone: readyOn(imageV1),
			action: func(ctx context.Context) error {
				_, err := e.apps.AppsV1alpha1().UnitedDeployments(udNS).Create(ctx, newUnitedDeployment(appName, udSubset, imageV1), metav1.CreateOptions{})
				return err
			},
			complete:   e.unitedDeploymentComplete(udNS, appName, n),
			controller: "workload-agent",
			agent:      a,
			ideal:      1,
		})
	})
	stopAgent(b, a, "uniteddeployment")
	if u, t := results["UnitedDeployment/ScaleOut"], results["TApp/ScaleOut"]; u != nil && t != nil {
		fmt.Printf("\n--- UnitedDeployment vs one TApp\n")
		compare("scale-out rate (pods/s), UnitedDeployment/TApp", "UnitedDeployment", "TApp",
			float64(u.pods)/u.ready.Seconds(), float64(t.pods)/t.ready.Seconds(), "", nil)
	}
	e.deleteNamespace(b, udNS)
}

// BenchmarkBusyNamespace: the agent's memory with BENCH_REPLICAS managed pods, and the plugin's
// one-shot status and get of that TApp, first alone in its namespace, then with BENCH_UNRELATED
// unrelated pods (Deployments created before the agent starts) in the same namespace. With the
// unrelated pods, the plugin also reads, in turns, an identical TApp in a namespace of its own.
func BenchmarkBusyNamespace(b *testing.B) {
	e := getEnv(b)
	e.deleteNamespace(b, controlNS) // left by an earlier run: the agent would manage its pods too
	e.ensureNamespace(b, tappNS)
	e.deleteFillers(b)
	e.ensureSettledTApp(b)
	plugin, kubectl := pluginBinary(b), pluginexec.Kubectl(b)

	for _, unrelated := range []int{0, unrelatedPods} {
		if unrelated > 0 {
			e.createFillers(b, unrelated)
		}
		label := fmt.Sprintf("unrelated=%d", unrelated)
		w := e.openWindow(b)
		a := e.startAgent(b, "busy-"+label)
		b.Run(label+"/AgentMemory", func(b *testing.B) { e.agentMemory(b, a, label, w) })
		targets := []pluginTarget{{label, tappNS}}
		if unrelated > 0 {
			// The same TApp in a namespace of its own, read in turns with the busy one: the ratio
			// of the two isolates the unrelated pods from the machine's load of the moment.
			e.ensureNamespace(b, controlNS)
			e.ensureTApp(b, controlNS)
			time.Sleep(settle) // let the last status updates of the new pods pass
			targets = append(targets, pluginTarget{label + "/other-namespace", controlNS})
		}
		b.Run(label+"/PluginStatus", func(b *testing.B) { e.pluginLatency(b, plugin, kubectl, "status", targets...) })
		b.Run(label+"/PluginGet", func(b *testing.B) { e.pluginLatency(b, plugin, kubectl, "get", targets...) })
		stopAgent(b, a, "busy-"+label)
	}
	compareBusy()
}

func compareBusy() {
	quiet, busy := "unrelated=0", fmt.Sprintf("unrelated=%d", unrelatedPods)
	q, bz := memResults[quiet], memResults[busy]
	if q == nil || bz == nil {
		return
	}
	fmt.Printf("\n--- %d managed pods alone vs with %d unrelated pods in the namespace\n", replicas, unrelatedPods)
	compare("agent RSS after settling, busy/quiet", busy, quiet, float64(bz.rss)/(1<<20), float64(q.rss)/(1<<20), "", nil)
	compare("agent peak RSS since start, busy/quiet", busy, quiet, float64(bz.peak)/(1<<20), float64(q.peak)/(1<<20), "", nil)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, verb := range []string{"status", "get"} {
		pq, pb, pc := pluginResults[quiet+"/"+verb], pluginResults[busy+"/"+verb], pluginResults[busy+"/other-namespace/"+verb]
		if pb != nil && pc != nil {
			compare("plugin "+verb+" median latency (ms), namespace with the unrelated pods / namespace without (runs in turns)",
				busy, busy+"/other-namespace", ms(pb.runs.Median()), ms(pc.runs.Median()), "", nil)
		}
		if pq != nil && pb != nil {
			compare("plugin "+verb+" median latency (ms), busy/quiet (minutes apart)", busy, quiet, ms(pb.runs.Median()), ms(pq.runs.Median()), "", nil)
		}
		comparePluginWithKubectl(verb, quiet, busy, busy+"/other-namespace")
	}
}

// comparePluginWithKubectl prints, for each label, the plugin's median over its kubectl
// counterpart's, their runs taken in turns (issue 30).
func comparePluginWithKubectl(verb string, labels ...string) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	target := kubectlTargets[verb]
	for _, l := range labels {
		p, k := pluginResults[l+"/"+verb], pluginResults[l+"/kubectl-"+verb]
		if p == nil || k == nil {
			continue
		}
		meets := float64(p.runs.Median()) <= target*float64(k.runs.Median())
		compare(fmt.Sprintf("plugin %s / kubectl %s, median latency (ms), %s (runs in turns)", verb, strings.Join(kubectlArgs(verb, "NS"), " "), l),
			"plugin", "kubectl", ms(p.runs.Median()), ms(k.runs.Median()), fmt.Sprintf("<= %.1f", target), &meets)
	}
}

// fillerName names the Deployments of unrelated pods.
func fillerName(i int) string { return fmt.Sprintf("unrelated-%d", i) }

const fillers = 4

func (e *env) createFillers(b *testing.B, total int) {
	b.Helper()
	start := time.Now()
	logf("bench: creating %d unrelated pods in %s (%d Deployments)", total, tappNS, fillers)
	for i := range fillers {
		n := total / fillers
		if i < total%fillers {
			n++
		}
		d := newDeployment(fillerName(i), n, "registry.invalid/unrelated:v1")
		if _, err := e.kube.AppsV1().Deployments(tappNS).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	poll(b, fmt.Sprintf("%d unrelated pods Ready", total), 2*time.Second, func(ctx context.Context) (bool, string, error) {
		ready := 0
		for i := range fillers {
			d, err := e.kube.AppsV1().Deployments(tappNS).Get(ctx, fillerName(i), metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			ready += int(d.Status.ReadyReplicas)
		}
		return ready == total, fmt.Sprintf("%d Ready", ready), nil
	})
	fmt.Printf("\n--- setup: %d unrelated pods (%d Deployments) Ready in %s (kube-controller-manager at %d QPS)\n",
		total, fillers, Secs(time.Since(start)), clientQPS)
}

func (e *env) deleteFillers(b *testing.B) {
	b.Helper()
	found := false
	for i := range fillers {
		err := e.kube.AppsV1().Deployments(tappNS).Delete(context.Background(), fillerName(i), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
		found = found || err == nil
	}
	if !found {
		return
	}
	poll(b, "unrelated pods gone", 2*time.Second, func(ctx context.Context) (bool, string, error) {
		list, err := e.kube.CoreV1().Pods(tappNS).List(ctx, metav1.ListOptions{LabelSelector: "app!=" + appName})
		if err != nil {
			return false, "", err
		}
		return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items)), nil
	})
}

// ensureSettledTApp makes sure the TApp of BenchmarkTApp runs BENCH_REPLICAS Ready instances,
// creating it (not measured) with an agent of its own when that benchmark was not selected.
func (e *env) ensureSettledTApp(b *testing.B) {
	b.Helper()
	if ok, _, _ := e.tappComplete(tappNS, appName, replicas)(context.Background()); ok {
		return
	}
	a := e.startAgent(b, "setup")
	e.ensureTApp(b, tappNS)
	stopAgent(b, a, "setup")
}

// ensureTApp creates the TApp of BENCH_REPLICAS instances in ns unless it exists, and waits until
// it is settled. An agent must run.
func (e *env) ensureTApp(b *testing.B, ns string) {
	b.Helper()
	_, err := e.apps.AppsV1alpha1().TApps(ns).Get(context.Background(), appName, metav1.GetOptions{})
	if err != nil {
		if _, err := e.apps.AppsV1alpha1().TApps(ns).Create(context.Background(), newTApp(appName, replicas, imageV1), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	poll(b, "TApp "+ns+"/"+appName+" settled", time.Second, e.tappComplete(ns, appName, replicas))
}
