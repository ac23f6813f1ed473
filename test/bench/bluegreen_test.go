package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/kubectl-workload/kubectl-workload/pkg/apis/apps/v1alpha1"
	"github.com/kubectl-workload/kubectl-workload/test/invariant"
)

// BenchmarkBlueGreenRelease: the agent releases a blue-green Canary of BENCH_REPLICAS pods from a
// stable Deployment of as many (its pods labelled already), promoted by hand once the preview is
// up, with no scale-down delay. Watched from this process: the time from the promote to the
// active Service's EndpointSlices holding every new pod, ready, and no old one; the most pods the
// two Deployments ran at once against replicas (2× by nature, docs/canary.md, "Blue-green"); and
// the fewest available against replicas.
func BenchmarkBlueGreenRelease(b *testing.B) {
	e := getEnv(b)
	e.deleteNamespace(b, canaryNS)
	e.ensureNamespace(b, canaryNS)
	ctx := context.Background()
	stable := newDeployment("stable", replicas, imageV1)
	stable.Spec.Template.Labels[appsv1alpha1.LabelBlueGreen] = "stable"
	if _, err := e.kube.AppsV1().Deployments(canaryNS).Create(ctx, stable, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"active", "preview"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{appsv1alpha1.LabelBlueGreen: "stable"}, Ports: []corev1.ServicePort{{Port: 80}}}}
		if _, err := e.kube.CoreV1().Services(canaryNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	poll(b, "the stable Deployment complete", time.Second, e.deploymentComplete(canaryNS, "stable", replicas))

	w := e.watchRelease(b)
	defer w.stop()
	a := e.startAgent(b, "canary", "--controllers=canary")
	defer func() { _ = a.Stop() }()
	// Deleted while the agent runs: it removes the Canary's finalizer (docs/canary.md), which
	// would otherwise hold the namespace Terminating for good.
	defer e.deleteNamespace(b, canaryNS)
	c := &appsv1alpha1.Canary{ObjectMeta: metav1.ObjectMeta{Name: "release"}}
	c.Spec.Replicas = int32(replicas)
	c.Spec.StableRef.Name = "stable"
	c.Spec.Canary.Name = "canary"
	c.Spec.Canary.Template = podTemplate("canary", imageV2)
	c.Spec.BlueGreen = &appsv1alpha1.CanaryBlueGreen{ActiveService: "active", PreviewService: "preview", ScaleDownDelaySeconds: ptr.To[int32](0)}
	if _, err := e.apps.AppsV1alpha1().Canaries(canaryNS).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	poll(b, "the preview up, waiting for a promote", time.Second, func(ctx context.Context) (bool, string, error) {
		got, err := e.apps.AppsV1alpha1().Canaries(canaryNS).Get(ctx, "release", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return got.Status.Phase == appsv1alpha1.CanaryPaused, string(got.Status.Phase) + ": " + got.Status.Message, nil
	})
	promoted := time.Now()
	if _, err := e.apps.AppsV1alpha1().Canaries(canaryNS).Patch(ctx, "release", types.MergePatchType, []byte(`{"spec":{"approvedBatch":1}}`), metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	poll(b, "the active Service selecting only the new pods", 50*time.Millisecond, e.selectsOnly("active", "canary"))
	switched := time.Since(promoted)
	poll(b, "the Canary Completed", time.Second, func(ctx context.Context) (bool, string, error) {
		done, state := w.completedState()
		return done, state, nil
	})
	peak, minAvailable, _, _ := w.figures()
	say("BlueGreen/Release: %d pods; promote → active Service on the new pods only in %s; peak %d pods, fewest available %d",
		replicas, switched.Round(time.Millisecond), peak, minAvailable)
	peakOK, availOK := peak <= 2*replicas, minAvailable >= replicas
	compare("BlueGreen peak pods / replicas", "peak", "replicas", float64(peak), float64(replicas), "≤ 2.0", &peakOK)
	compare("BlueGreen min available / replicas", "available", "replicas", float64(minAvailable), float64(replicas), "≥ 1.0", &availOK)
	b.ReportMetric(switched.Seconds(), "promote-to-switch-s")
	b.ReportMetric(float64(peak)/float64(replicas), "peak/replicas")
	b.ReportMetric(float64(minAvailable)/float64(replicas), "minavail/replicas")
}

// selectsOnly reports whether a Service's EndpointSlices hold every replica of version, ready,
// and no pod of another.
func (e *env) selectsOnly(service, version string) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		list, err := e.kube.DiscoveryV1().EndpointSlices(canaryNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return false, "", err
		}
		ready, other := 0, 0
		for _, s := range list.Items {
			for _, ep := range s.Endpoints {
				switch {
				case ep.TargetRef == nil || invariant.VersionOf(ep.TargetRef.Name, []string{"stable", "canary"}) != version:
					other++
				case ptr.Deref(ep.Conditions.Ready, false):
					ready++
				}
			}
		}
		return ready == replicas && other == 0, fmt.Sprintf("%d ready endpoints of %s, %d others", ready, version, other), nil
	}
}
